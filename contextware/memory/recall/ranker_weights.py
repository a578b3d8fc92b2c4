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
    "speaker": 0.0,
    "echo": 0.0,
    "restated": 0.0,
    "restates": 0.0,
    "bias": 0.0,
}

LOGS: dict[str, float] = {
    "cosine": 0.9,
    "bm25": 0.0733,
    "log_bm25": -0.0379,
    "rr_cosine": 0.1379,
    "rr_bm25": 0.4027,
    "coverage": 1.0447,
    "noise": 0.0,
    "length": 0.0747,
    "date": 0.9559,
    "neighbour": 0.6347,
    "follows": 0.8076,
    "speaker": 0.4735,
    "echo": -0.0806,
    "restated": 0.0,
    "restates": 0.0,
    "bias": 0.0,
}

CONFIDENCE: dict[str, float] = {}
