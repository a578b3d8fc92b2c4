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
    "follows": 0.0,
    "echo": 0.0,
    "restated": 0.0,
    "restates": 0.0,
    "bias": 0.0,
}

LOGS: dict[str, float] = {
    "cosine": 0.9,
    "bm25": -0.0134,
    "log_bm25": -0.2144,
    "rr_cosine": 0.0491,
    "rr_bm25": -1.0884,
    "coverage": 4.3254,
    "noise": 0.0,
    "length": -0.1765,
    "date": 0.0,
    "neighbour": 2.3897,
    "follows": 5.1556,
    "echo": 0.0,
    "restated": 0.0,
    "restates": 0.0,
    "bias": 0.0,
}

CONFIDENCE: dict[str, float] = {
    "bias": -2.175,
    "relevance": 0.742,
    "agreement": 1.702,
    "margin": 2.481,
    "gap": 2.034,
    "unknown": -0.707,
    "unknown_name": -0.23,
}
