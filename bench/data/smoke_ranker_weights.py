"""The fitted ranker's and confidence's weights.  Written by ``uv run bench/fit_ranker.py``
(smoke sets); never edited by hand: refit instead.  ``params.RankerParams`` and
``params.ConfidenceParams`` read them."""

MEMORY: dict[str, float] = {
    "cosine": 1.0,
    "bm25": 0.2,
    "log_bm25": 0.0,
    "rr_cosine": 0.0,
    "rr_bm25": 0.0,
    "coverage": 0.0,
    "noise": 0.0,
    "length": 0.0,
    "date": 0.0,
    "neighbour": 0.0,
    "echo": 0.0,
    "restated": 0.0,
    "restates": 0.0,
    "bias": 0.0,
}

LOGS: dict[str, float] = {
    "cosine": 2.0772,
    "bm25": 1.3365,
    "log_bm25": -0.1604,
    "rr_cosine": -0.2051,
    "rr_bm25": -0.9985,
    "coverage": 4.4384,
    "noise": 1.2872,
    "length": -0.1769,
    "date": 0.0,
    "neighbour": 2.9508,
    "echo": 0.0,
    "restated": 0.0,
    "restates": 0.0,
    "bias": -0.5681,
}

CONFIDENCE: dict[str, float] = {
    "bias": -1.778,
    "relevance": 0.122,
    "agreement": 1.298,
    "margin": 1.698,
    "gap": 0.734,
    "unknown": -0.805,
    "unknown_name": -0.102,
}
