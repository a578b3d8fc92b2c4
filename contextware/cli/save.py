"""``save_fact.py``: save a fact, an episode or a conversation log."""

from __future__ import annotations

import argparse

from contextware.cli import add_common, new_parser, open_project, read_content

DESCRIPTION = """Save a fact (default), an episode or a conversation log to the project's memory.

An exact duplicate returns the existing id as duplicate_of and writes nothing; near-duplicates are
saved and listed under similar, so you can supersede one. Obvious secrets are redacted."""


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = new_parser(prog, DESCRIPTION)
    p.add_argument("content", help="the text to save, or - to read it from standard input")
    p.add_argument("--type", default="fact", help="fact (default), episode or log")
    f = p.add_argument_group("facts")
    f.add_argument("--kind", help="preference, constraint, decision, convention, environment or note (default)")
    f.add_argument("--topics", help="comma-separated topics, e.g. testing,ci (facts and episodes)")
    f.add_argument(
        "--supersedes", metavar="ID", help="id of the fact this one replaces (kept for audit, hidden from recall)"
    )
    e = p.add_argument_group("episodes (the content is the summary: what was done and learned)")
    e.add_argument("--goal", help="what the task set out to do")
    e.add_argument("--result", help="success, failure or partial")
    e.add_argument("--category", help="shell, git, code, test, build, deploy, debug, ...")
    lg = p.add_argument_group("logs (long text is chunked)")
    lg.add_argument("--session", dest="session_id", metavar="ID", help="conversation/session id")
    lg.add_argument("--role", help="user or agent")
    lg.add_argument("--speaker", metavar="NAME", help="who spoke, when a role has several people (e.g. two users)")
    add_common(p)
    return p


def handle(args: argparse.Namespace) -> dict:
    from contextware.errors import UsageError
    from contextware.memory.records import save
    from contextware.storage.embeddings import preload_in_background

    if (args.type or "").strip().lower() == "episode":
        wanted = {
            "--goal": (args.goal, "what the task set out to do"),
            "--result": (args.result, "whether it worked: success, failure or partial"),
        }
        missing = [(flag, why) for flag, (value, why) in wanted.items() if value is None]
        if missing:
            raise UsageError(
                "An episode needs " + " and ".join(f"{flag} ({why})" for flag, why in missing) + ".",
                code="missing_" + missing[0][0].strip("-"),
            )
    content = read_content(args.content)
    project = open_project(args)
    preload_in_background(project.embedder)
    return save(
        project,
        args.type,
        content or "",
        kind=args.kind,
        topics=args.topics,
        supersedes=args.supersedes,
        goal=args.goal,
        result=args.result,
        category=args.category,
        session_id=args.session_id,
        role=args.role,
        speaker=args.speaker,
    )


def render_text(result: dict) -> str:
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
