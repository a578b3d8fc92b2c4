"""What of each memory is embedded and what is full-text indexed.

These views decide retrieval quality as much as the fusion in ``recall.py`` does; both are measured
by ``bench/recall_quality.py``.
"""

from __future__ import annotations


def embedding_text(collection: str, row: dict) -> str:
    if collection == "episodes":
        return f"{row.get('goal') or ''}. {row.get('summary') or ''}"
    return row.get("text") or ""


def search_text(collection: str, row: dict) -> str:
    topics = " ".join(row.get("topics") or [])
    if collection == "facts":
        return f"{row['text']} {row.get('kind') or ''} {topics}".strip()
    if collection == "episodes":
        return f"{row['goal']} {row['summary']} {row.get('category') or ''} {row.get('result') or ''} {topics}".strip()
    return row["text"]
