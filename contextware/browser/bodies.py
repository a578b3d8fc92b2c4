"""The bodies of the browser's larger pages, rendered from plain values (what ``views`` and the
memory functions return) to HTML.  Every stored text goes through ``html.e``; nothing here reads
the project or the request."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from contextware.browser import views
from contextware.browser.html import a, dl, e, size, table, url
from contextware.browser.models import CodeFile, Dashboard

if TYPE_CHECKING:
    from contextware.memory.recall.types import RecallJson
    from contextware.memory.turns.decisions import TurnDecision
    from contextware.memory.turns.usage import UseSummary

TEXT_CHARS = 400  # a memory's text in a list is shortened to this
COLLECTIONS = ("facts", "episodes", "logs")


def short(text: object, limit: int = TEXT_CHARS) -> str:
    from contextware.core.text import cut_at_word

    return cut_at_word(" ".join(str(text or "").split()), limit)


def body_of(r: Mapping[str, object]) -> str:
    """The words of a memory, whatever its collection."""
    if r.get("collection") == "episodes":
        return f"{r.get('goal') or ''} → {r.get('summary') or ''}"
    return str(r.get("text") or r.get("summary") or r.get("prompt") or "")


def badge(r: Mapping[str, object]) -> str:
    tags = [r.get("kind") or r.get("result") or r.get("role") or ""]
    out = "".join(f"<span class=tag>{e(t)}</span>" for t in tags if t)
    if r.get("status") == "superseded":
        out += "<span class='tag superseded'>superseded</span>"
    if r.get("may_be_stale"):
        out += f"<span class='tag stale' title='{e(r['may_be_stale'])}'>may be stale</span>"
    return out


def _use_rate(use: "UseSummary") -> str:
    """Of the memories the prompt hook injected, the share the agent used ("—" before any)."""
    rate = use.get("use_rate")
    return "—" if rate is None else f"{rate:.0%} of {use.get('injections', 0)}"


def dashboard(d: Dashboard) -> str:
    tables = d["tables"] or {}
    rows = [(tables.get(n) or {}).get("rows", 0) for n in COLLECTIONS]
    cards = "".join(
        f"<div class=card>{e(label)}<b>{e(value)}</b></div>"
        for label, value in (
            ("facts", rows[0]),
            ("episodes", rows[1]),
            ("logs", rows[2]),
            ("files indexed", d["code"]["files"]),
            ("stale memories", d["stale_memories"]),
            ("use rate", _use_rate(d["use"] or {})),
            ("changed files", "…" if d["code"]["stale"] is None else d["code"]["stale"]),
        )
    )
    svc = d["service"]
    service = f"running (pid {svc.get('pid')}, {svc.get('requests')} requests)" if svc.get("running") else "not running"
    overview = dl(
        [
            ("project", d["project_root"]),
            ("data", d["data_dir"]),
            ("model", d["model"]),
            ("disk", size(d["disk_bytes"])),
            ("last write", d["last_write"] or "never"),
            ("last crawl", d["code"]["last_crawl"] or "never"),
            ("service", f"{service}; mode {svc.get('mode')}"),
        ]
    )
    per_table = table(
        ["table", "rows", "disk", "versions", "missing vectors", "last write"],
        [
            (
                e(name),
                e(info.get("rows", info.get("damaged", ""))),
                e(size(info.get("disk_bytes"))),
                e(info.get("versions", "")),
                e(info.get("missing_vectors", "")),
                e(info.get("last_write") or ""),
            )
            for name, info in tables.items()
        ],
    )
    links = (
        f"<p>{a('/review', 'Review queues')} · {a('/turns', 'What the hook injected')} · "
        f"{a('/memories?stale=1', 'Memories whose code changed')} · "
        f"{a('/memories?superseded=only', 'Superseded facts')} · {a('/code', 'Code map')}</p>"
    )
    source = (
        "<p class=muted id=partial>Figures from the resident service; changed files are being counted.</p>"
        if d["from_service"]
        else ""
    )
    body = f"<div class=cards>{cards}</div>{links}{overview}<h2>Tables</h2>{per_table}{source}"
    return body


def turns(found: "list[TurnDecision]") -> str:
    def item(x: Mapping[str, object], why: str | None = None) -> str:
        rid = str(x.get("id") or "")
        target = f"/offloads/{rid}" if x.get("collection") == "offloads" else f"/memory/{rid}"
        if x.get("collection") == "code_index":
            target = url("/code/file", path=rid)
        numbers = f"score {x.get('score')}, confidence {x.get('confidence')}"
        return f"<li>{a(target, rid)} <span class=muted>{e(numbers)}</span>" + (
            f"<br><span class=muted>{e(why)}</span></li>" if why else "</li>"
        )

    rows = []
    for d in found:
        sid = d.get("session")
        injected: Sequence[Mapping[str, object]] = d.get("injected") or []
        rows.append(
            (
                e(str(d.get("at") or "").replace("T", " ").rstrip("Z"))
                + ("<br>" + a(f"/sessions/{sid}", sid) if sid else ""),
                f"<span class=text>{e(d.get('prompt'))}</span><br>"
                + a(url("/explain", q=d.get("prompt") or ""), "explain again"),
                (f"<ul>{''.join(item(x) for x in injected)}</ul>" if injected else "<span class=muted>nothing</span>"),
                f"<p>{e(d.get('verdict'))}</p><ul>{''.join(item(x, x.get('why')) for x in d.get('held') or [])}</ul>",
            )
        )
    body = (
        "<p class=muted>What the prompt hook put into each turn's context, and the best of what it held back "
        "(the newest first; the prompt's start only, secrets masked).</p>"
        + (table(["when", "prompt", "injected", "held back"], rows) if rows else "<p>No turn recorded yet.</p>")
    )
    return body


def code_map(m: views.CodeMap) -> str:
    crumbs = [a("/code", "(project)")]
    acc = ""
    for part in [p for p in m.folder.split("/") if p]:
        acc = f"{acc}/{part}" if acc else part
        crumbs.append(a(url("/code", folder=acc), part))
    folders = [
        (
            a(url("/code", folder=f.path), f.path.rsplit("/", 1)[-1] + "/"),
            f'<meter min=0 max="{m.largest}" value="{f.bytes}"></meter>',
            f"<span class=num>{e(f.files)}</span>",
            e(size(f.bytes)),
            f"<span class={'stale' if f.stale else 'fresh'}>{e(f.stale)} changed</span>",
            e(f.recalled or ""),
        )
        for f in m.folders
    ]
    files = [
        (
            a(url("/code/file", path=f.path), f.path.rsplit("/", 1)[-1]),
            f'<meter min=0 max="{m.largest}" value="{f.bytes}"></meter>',
            e("" if f.lines is None else f"{f.lines} lines"),
            e(size(f.bytes)),
            f"<span class={e(f.state)}>{e(f.state)}</span>",
            e(f.recalled or ""),
        )
        for f in m.files
    ]
    body = (
        f"<p>{' / '.join(crumbs)} <span class=muted>({m.total_files} files indexed; recalled: how often a "
        "file went into a prompt's context in the recent turns)</span></p>"
    )
    if not m.total_files:
        body += "<p>The code index is empty: run <code>contextware crawl</code>.</p>"
    if folders:
        body += table(["folder", "size", "files", "bytes", "freshness", "recalled"], folders, "map")
    if files:
        body += table(["file", "size", "lines", "bytes", "freshness", "recalled"], files, "map")
    return body


def code_file(f: CodeFile, path: str) -> str:
    folder = path.rsplit("/", 1)[0] if "/" in path else ""
    parts = [
        f"<p>{a(url('/code', folder=folder), 'Back to ' + (folder or 'the project'))}</p>",
        dl(
            [
                ("language", f["language"]),
                ("freshness", f["state"]),
                ("lines", f["lines"]),
                ("size", size(f["size"])),
                ("indexed", f["indexed_at"]),
                ("summarizer", f["summarizer"]),
                ("summary", f["summary"]),
                ("symbols", ", ".join(f["symbols"])),
            ]
        ),
    ]
    if f["definitions"]:
        rows = [
            (e(d.get("kind")), e(d.get("name")), e(f"{d.get('start_line')}-{d.get('end_line')}"))
            for d in f["definitions"]
        ]
        parts.append("<h2>Definitions</h2>" + table(["kind", "name", "lines"], rows))
    if f["memories"]:
        rows = [
            (a(f"/memory/{r['id']}", r["id"]), badge(r), f"<span class=text>{e(short(body_of(r)))}</span>")
            for r in f["memories"]
        ]
        parts.append("<h2>Memories that name it</h2>" + table(["id", "", "text"], rows))
    return "".join(parts)


def explanation(result: "RecallJson", form: str) -> str:
    why = result["explanation"]
    rows = []
    for c in why["candidates"]:
        s = c.get("signals") or {}
        target = {"code_index": url("/code/file", path=c["id"]), "offloads": f"/offloads/{c['id']}"}.get(
            c["collection"], f"/memory/{c['id']}"
        )
        link = a(target, c["id"])
        rows.append(
            (
                e(c["shown"] or "–"),
                link + f"<br><span class='text muted'>{e(c['label'])}</span>",
                e("–" if c["cosine"] is None else f"{c['cosine']:.3f}")
                + (f" <span class=muted>#{c['cosine_rank']}</span>" if c["cosine_rank"] else ""),
                e(f"{c['bm25']:.3f}") + (f" <span class=muted>#{c['bm25_rank']}</span>" if c["bm25_rank"] else ""),
                e(f"{c['score']:.3f}"),
                e(f"{c['confidence']:.3f}"),
                "<span class=muted>" + e(", ".join(f"{k} {v:.2f}" for k, v in s.items())) + "</span>",
                e(c["decided_by"]),
            )
        )
    body = (
        form
        + f"<p role=status><strong>{e(why['verdict'])}</strong></p>"
        + f"<p class=muted>{len(rows)} of {why['total_candidates']} candidates; gate {e(why['min_confidence'])}, floor {e(why['floor'])}.</p>"
        + table(
            ["shown", "candidate", "cosine", "BM25", "fused", "confidence", "signals", "decided by"],
            rows,
            "explain",
        )
    )
    return body
