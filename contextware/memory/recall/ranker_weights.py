"""The fitted ranker's and confidence's weights.  Written by ``uv run bench/fit_ranker.py``
(train splits); never edited by hand: refit instead.  ``params.RankerParams`` and
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
    "bm25": 0.0045,
    "log_bm25": -0.0309,
    "rr_cosine": 0.0591,
    "rr_bm25": 0.2556,
    "coverage": 0.7728,
    "noise": 0.0,
    "length": 0.0659,
    "date": 0.6513,
    "neighbour": 0.4027,
    "follows": 0.4989,
    "echo": -0.1054,
    "restated": 0.0,
    "restates": 0.0,
    "bias": 0.0,
}

CONFIDENCE: dict[str, float] = {}
