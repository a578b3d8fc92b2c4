"""The fitted ranker's and confidence's weights.  Written by ``uv run bench/fit_ranker.py``
(train splits); never edited by hand: refit instead.  ``params.RankerParams`` and
``params.ConfidenceParams`` read them."""

MEMORY: dict[str, float] = {
    "cosine": 1.0,
    "bm25": 0.0091,
    "log_bm25": -0.0322,
    "rr_cosine": 0.0136,
    "rr_bm25": 0.0637,
    "coverage": 0.0022,
    "noise": 0.7555,
    "length": 0.0012,
    "date": -0.0052,
    "neighbour": 0.0,
    "echo": 0.0,
    "restated": -0.3047,
    "restates": 0.0719,
    "bias": 0.0,
}

LOGS: dict[str, float] = {
    "cosine": 0.2782,
    "bm25": 0.0229,
    "log_bm25": -0.0066,
    "rr_cosine": 0.0225,
    "rr_bm25": 0.0719,
    "coverage": 0.15,
    "noise": 0.078,
    "length": 0.0515,
    "date": 0.1766,
    "neighbour": 0.1217,
    "echo": -0.0181,
    "restated": 0.0,
    "restates": 0.0,
    "bias": -0.0715,
}

CONFIDENCE: dict[str, float] = {
    "bias": -2.102,
    "relevance": -0.613,
    "agreement": 1.175,
    "margin": 5.728,
    "gap": 5.79,
    "unknown": -0.289,
    "unknown_name": -0.167,
}
