"""``memory.py``: look at, fix and clean up what was saved."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any, cast

from contextware.cli import add_common, new_parser, open_project
from contextware.cli.declared_args import add_params, values_of
from contextware.operations.memory import MEMORY_OPERATIONS

DESCRIPTION = """Inspect and fix the project's memory.

  list [--collection C] [--limit N]   newest first
  list --stale                        facts and episodes whose code changed since
  get ID                              one memory
  confirm ID                          it still holds: clear its may-be-stale flag
  review                              imported memories quarantined, with the reason
  accept ID                           release a quarantined memory (hooks may inject it)
  update ID [--text ...] [...]        change fields (re-embeds)
  delete ID                           remove one memory
  history ID                          a fact's supersession chain, oldest first
  stats                               rows, disk, model, versions per table
  reembed [--all]                     fill in missing vectors / rebuild for a new model
  compact                             compact tables and drop old versions
  retain [--older-than DAYS] [--dry-run]
                                      archive old sessions' turns into their
                                      digests (default: log_retention_days)
  repair                              make damaged tables readable again, clean logs
                                      stored with injected memory blocks, redact
                                      secrets older versions stored, and link older
                                      memories to the code they name"""


DECLARED = {op.subcommand: op for op in MEMORY_OPERATIONS}


def build_parser(prog: str) -> argparse.ArgumentParser:
    p = new_parser(prog, DESCRIPTION)
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(p))

    def declared(name: str) -> None:
        op = DECLARED[name]
        add_params(sub.add_parser(name, help=op.doc, description=op.summary), op)

    declared("list")
    declared("get")
    declared("confirm")
    sub.add_parser("review", help="list the quarantined imported memories with the reason")
    ac = sub.add_parser("accept", help="release a quarantined imported memory after reading it")
    ac.add_argument("id")
    declared("update")
    declared("delete")
    declared("history")
    declared("stats")
    pr = sub.add_parser("promote", help="make a branch's memories everyone's (after a squash merge)")
    pr.add_argument("--branch", required=True, metavar="NAME", help="the branch whose memories every checkout sees")
    r = sub.add_parser("reembed", help="compute missing vectors, or all of them for a new model")
    r.add_argument("--all", action="store_true", help="re-embed every row, not only the missing ones")
    sub.add_parser("compact", help="compact every table and drop old versions")
    sub.add_parser("repair", help="restore damaged tables to their newest readable version")
    rt = sub.add_parser("retain", help="fold old sessions' turns into their digests and archive them")
    rt.add_argument(
        "--older-than",
        type=float,
        metavar="DAYS",
        help="sessions whose last turn is older (default: log_retention_days)",
    )
    rt.add_argument("--dry-run", action="store_true", help="list the sessions, change nothing")
    for action in sub.choices.values():
        add_common(action)
    add_common(p)
    return p


def handle(args: argparse.Namespace) -> Mapping[str, object]:
    from contextware.cli import read_content
    from contextware.memory import maintenance, records

    action = args.action
    if op := DECLARED.get(action):
        values = values_of(args, op)
        if action == "update":  # - reads standard input (the command line's alone)
            values.update(text=read_content(values["text"]), summary=read_content(values["summary"]))
        request = op.check(values)
        return op.run(open_project(args), request, values)
    project = open_project(args)
    if action in ("review", "accept"):
        from contextware.memory import trust

        if action == "accept":
            return cast("dict[str, Any]", trust.accept(project, records.check_id(args.id)))
        queue = trust.review_queue(project)
        return {"quarantined": queue, "count": len(queue)}
    if action == "promote":
        from contextware.memory.branches import promote

        return cast("dict[str, Any]", promote(project, args.branch))
    if action == "reembed":
        return cast("dict[str, Any]", maintenance.reembed(project, all_rows=args.all))
    if action == "compact":
        return maintenance.compact(project)
    if action == "retain":
        from contextware.memory.turns import retention

        days = args.older_than if args.older_than is not None else retention.configured_days(project)
        return retention.retain(project, older_than=days, dry_run=args.dry_run, use_model=True)
    from contextware.memory.cleanup import clean_injected_logs, scrub_secrets

    report = maintenance.repair(project)
    report["logs_cleaned"] = clean_injected_logs(project)  # turns stored with injected blocks (issue 14)
    report["secrets_scrubbed"] = scrub_secrets(project)  # texts stored before today's detectors (issue 15)
    from contextware.core.private import tighten
    from contextware.core.system import contextware_home

    # files an older version made 0644 in 0755 folders: readable by every local user
    report["permissions_tightened"] = tighten(project.data_dir) + tighten(contextware_home(project.settings))

    from contextware.memory.code_links import link_unlinked

    report["code_links"] = link_unlinked(project)  # memories saved before links (or the code index) existed
    return report


def _body(r: dict[str, Any]) -> str:
    return r.get("text") or f"{r.get('goal')} → {r.get('summary')}"


def render_text(result: dict[str, Any]) -> str:
    from contextware.cli.render import fields, generic, paint, table

    if "records" in result:
        rows = [
            {
                "id": r["id"],
                "saved": (r.get("created_at") or "")[:16].replace("T", " "),
                "kind": r.get("kind") or r.get("result") or r.get("role") or "",
                "text": _body(r)
                + (" (superseded)" if r.get("status") == "superseded" else "")
                + (f" (may be stale: {r['may_be_stale']})" if r.get("may_be_stale") else ""),
            }
            for r in result["records"]
        ]
        head = paint(f"{result['count']} of {result['total']} memories", "bold")
        return head + ("\n" + table(rows, ["id", "saved", "kind", "text"]) if rows else "")
    if "chain" in result:
        rows = [
            {
                "id": r["id"],
                "status": r.get("status") or "",
                "saved": (r.get("created_at") or "")[:16].replace("T", " "),
                "updated": (r.get("updated_at") or "")[:16].replace("T", " "),
                "text": _body(r),
            }
            for r in result["chain"]
        ]
        lines = [
            paint(
                f"History of {result['id']} ({result['collection']}), oldest first; current: {result['current']}",
                "bold",
            )
        ]
        lines.append(table(rows, ["id", "status", "saved", "updated", "text"]))
        lines += [f"missing link: {m} (deleted or never imported)" for m in result["missing"]]
        return "\n".join(lines)
    if "repaired" in result and "message" in result:
        return result["message"]
    if "quarantined" in result:
        rows = [{k: q[k] for k in ("id", "reason", "author", "text")} for q in result["quarantined"]]
        head = paint(f"{result['count']} quarantined memories (accept with: memory accept ID)", "bold")
        return head + ("\n" + table(rows, ["id", "reason", "author", "text"]) if rows else "")
    if result.get("accepted"):
        return f"Accepted {result['id']} (it was quarantined: {result['was']})."
    if result.get("confirmed"):
        linked = ", ".join(result["code_links"]) or "no indexed file"
        return f"Confirmed {result['id']}; it is tied to {linked} as the code is now."
    if "record" in result and "updated" in result:
        return (
            paint(f"Updated {', '.join(result['updated'])} of {result['id']}.", "bold")
            + "\n"
            + fields(result["record"])
        )
    if "record" in result:
        return fields(result["record"])
    if result.get("deleted"):
        extra = f" {result['reactivated']} is current again." if result.get("reactivated") else ""
        return f"Deleted {result['id']} from {result['collection']}.{extra}"
    tables = result.get("tables")
    if isinstance(tables, dict) and tables and all(isinstance(v, dict) for v in tables.values()):
        rows = [{"table": name, **info} for name, info in tables.items()]
        overview = {k: v for k, v in result.items() if k not in ("ok", "tables")}
        return fields(overview) + "\n\n" + table(rows, list(dict.fromkeys(k for r in rows for k in r)))
    if isinstance(tables, list):
        return table(tables, list(dict.fromkeys(k for r in tables for k in r)))
    return generic(result)
