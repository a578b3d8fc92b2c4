"""``save_fact.py``: save a fact, an episode or a conversation log."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING

from contextware.cli import add_common, new_parser, open_project, read_content
from contextware.cli.declared_args import add_params, values_of
from contextware.operations.save import SAVE

if TYPE_CHECKING:
    from contextware.memory.results import Saved

DESCRIPTION = SAVE.summary


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = new_parser(prog, DESCRIPTION)
    add_params(p, SAVE)
    add_common(p)
    return p


def handle(args: argparse.Namespace) -> Mapping[str, object]:
    from contextware.storage.embeddings import preload_in_background

    values = values_of(args, SAVE)
    request = SAVE.check(values)  # an episode without its goal or result is refused before stdin is read
    request["content"] = read_content(values["content"]) or ""
    project = open_project(args)
    preload_in_background(project.embedder)
    return SAVE.run(project, request, values)


def render_text(result: "Saved") -> str:
    if result.get("duplicate_of"):
        return f"Already saved as {result['duplicate_of']} (nothing written)."
    lines = [f"Saved {result['collection'][:-1]} {result['id']}."]
    if result.get("superseded"):
        lines.append(f"It supersedes {result['superseded']}.")
    if result.get("redacted"):
        lines.append("Redacted: " + ", ".join(f"{k} ×{v}" for k, v in result["redacted"].items()))
    for s in result.get("similar", []):
        lines.append(f"  similar {s['id']} ({s['score']:.2f}): {s['text'][:100]}")
    if result.get("degraded"):
        lines.append(f"Warning: {result['degraded']}")
    return "\n".join(lines)
