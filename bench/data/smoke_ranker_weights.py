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
    "speaker": 0.0,
    "echo": 0.0,
    "restated": 0.0,
    "restates": 0.0,
    "bias": 0.0,
}

LOGS: dict[str, float] = {
    "cosine": 0.9,
    "bm25": 4.8782,
    "log_bm25": -1.3702,
    "rr_cosine": 0.6478,
    "rr_bm25": -7.755,
    "coverage": 24.1954,
    "noise": 0.0,
    "length": -1.1765,
    "date": 0.0,
    "neighbour": 14.0308,
    "follows": 31.4742,
    "speaker": 5.0602,
    "echo": 0.0,
    "restated": 0.0,
    "restates": 0.0,
    "bias": 0.0,
}

CONFIDENCE: dict[str, float] = {
    "bias": -2.054,
    "relevance": 0.543,
    "agreement": 1.581,
    "margin": 2.477,
    "gap": 1.983,
    "unknown": -0.74,
    "unknown_name": -0.207,
}
