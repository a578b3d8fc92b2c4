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
    "echo": 0.0,
    "restated": 0.0,
    "restates": 0.0,
    "bias": 0.0,
}

LOGS: dict[str, float] = {
    "cosine": 7.021,
    "bm25": 0.6267,
    "log_bm25": -0.1852,
    "rr_cosine": 0.2371,
    "rr_bm25": 1.4306,
    "coverage": 4.4116,
    "noise": 5.7643,
    "length": 0.7518,
    "date": 4.2384,
    "neighbour": 2.8541,
    "echo": -0.5438,
    "restated": 0.0,
    "restates": 0.0,
    "bias": -7.4342,
}

CONFIDENCE: dict[str, float] = {}
