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
    "cosine": 0.9,
    "bm25": 0.5791,
    "log_bm25": -0.0695,
    "rr_cosine": -0.0889,
    "rr_bm25": -0.4326,
    "coverage": 1.923,
    "noise": 0.0,
    "length": -0.0767,
    "date": 0.0,
    "neighbour": 1.2785,
    "echo": 0.0,
    "restated": 0.0,
    "restates": 0.0,
    "bias": 0.0,
}

CONFIDENCE: dict[str, float] = {}
