"""The browser's routes.  Each page calls the functions the CLI and MCP call (``memory.records``
list/get/update/delete/save, ``memory.history``, ``memory.recall``) or a read model of ``views``,
in a worker thread, one at a time (the project's database and model are shared by every page).
Writes are POST only and need the token in the form as well; a bad id or filter is a page with
one sentence, never a traceback."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from contextware.browser import views
from contextware.browser.guard import form_token_ok
from contextware.browser.html import a, dl, e, error_page, hidden, page, select, size, table, url
from contextware.errors import ContextwareError, NotFoundError, UsageError, internal_error

if TYPE_CHECKING:
    from contextware.storage.project import Project

PAGE_SIZE = 50
SEARCH_LIMIT = 20
MAX_FORM_BYTES = 1_000_000
MAX_FORM_FIELDS = 40
TEXT_CHARS = 400  # a memory's text in a list is shortened to this
FACT_KINDS = ("preference", "constraint", "decision", "convention", "environment", "note")
COLLECTIONS = ("facts", "episodes", "logs")
STATIC = Path(__file__).parent / "static"
EDITABLE = {  # what the edit form offers per collection (records.update takes the same)
    "facts": ("text", "kind", "topics"),
    "episodes": ("goal", "result", "category", "summary", "topics"),
    "logs": ("text", "role"),
}

Handler = Callable[[Request], Awaitable[Response]]


def _short(text: Any, limit: int = TEXT_CHARS) -> str:
    from contextware.text import cut_at_word

    return cut_at_word(" ".join(str(text or "").split()), limit)


def body_of(r: dict[str, Any]) -> str:
    """The words of a memory, whatever its collection."""
    if r.get("collection") == "episodes":
        return f"{r.get('goal') or ''} → {r.get('summary') or ''}"
    return str(r.get("text") or r.get("summary") or r.get("prompt") or "")


def badge(r: dict[str, Any]) -> str:
    tags = [r.get("kind") or r.get("result") or r.get("role") or ""]
    out = "".join(f"<span class=tag>{e(t)}</span>" for t in tags if t)
    if r.get("status") == "superseded":
        out += "<span class='tag superseded'>superseded</span>"
    if r.get("may_be_stale"):
        out += f"<span class='tag stale' title='{e(r['may_be_stale'])}'>may be stale</span>"
    return out


class Pages:
    def __init__(self, project: "Project", token: str) -> None:
        self.project = project
        self.token = token
        self.lock = threading.Lock()  # one page at a time works on the project
        self.warm = threading.Event()  # set once this process has its own database open (``warm_up``)

    def warm_up(self) -> None:
        """Open the database in this process, in the background, before the first page needs it."""
        try:
            with self.lock:
                views.warm_up(self.project)
            from contextware.storage.embeddings import preload_in_background

            preload_in_background(self.project.embedder)  # the first search need not wait for the model
        except Exception:  # noqa: BLE001 - the page that needs the tables reports the problem
            pass
        finally:
            self.warm.set()

    async def work(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        def call() -> Any:
            with self.lock:
                return fn(*args, **kwargs)

        return await run_in_threadpool(call)

    def routes(self) -> list[Any]:
        def guarded(handler: Handler) -> Handler:
            async def run(request: Request) -> Response:
                try:
                    return await handler(request)
                except ContextwareError as exc:
                    from contextware.redact import redact_error

                    status = (
                        403
                        if isinstance(exc, _Refused)
                        else 404
                        if isinstance(exc, NotFoundError)
                        else 400
                        if isinstance(exc, UsageError)
                        else 500
                    )
                    message = redact_error(exc.to_dict())["message"]
                    return HTMLResponse(error_page(message, status), status_code=status)
                except Exception as exc:  # noqa: BLE001 - a page, never a traceback
                    return HTMLResponse(error_page(internal_error(exc)["message"], 500), status_code=500)

            return run

        return [
            Route("/", guarded(self.dashboard)),
            Route("/memories", guarded(self.memories)),
            Route("/memory/{id}", guarded(self.memory)),
            Route("/memory/{id}/edit", guarded(self.edit), methods=["GET", "POST"]),
            Route("/memory/{id}/supersede", guarded(self.supersede), methods=["GET", "POST"]),
            Route("/memory/{id}/delete", guarded(self.delete), methods=["GET", "POST"]),
            Route("/memory/{id}/confirm", guarded(self.confirm), methods=["POST"]),
            Route("/review", guarded(self.review)),
            Route("/review/keep/{id}", guarded(self.keep), methods=["POST"]),
            Route("/sessions", guarded(self.sessions)),
            Route("/sessions/{sid:path}", guarded(self.timeline)),
            Route("/turns", guarded(self.turns)),
            Route("/offloads", guarded(self.offloads)),
            Route("/offloads/{id}", guarded(self.offload)),
            Route("/code", guarded(self.code)),
            Route("/code/file", guarded(self.code_file)),
            Route("/explain", guarded(self.explain)),
            Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
        ]

    async def form(self, request: Request) -> dict[str, str]:
        """A POST's fields, after its size and its token are checked."""
        from urllib.parse import parse_qsl

        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/x-www-form-urlencoded":
            raise UsageError("A form is sent as application/x-www-form-urlencoded.", code="bad_form")
        body = bytearray()
        async for chunk in request.stream():  # bounded, whatever Content-Length says (or not)
            body += chunk
            if len(body) > MAX_FORM_BYTES:
                raise UsageError("The form is too large.", code="too_large")
        try:
            fields = parse_qsl(body.decode("utf-8"), keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS)
        except (UnicodeDecodeError, ValueError):
            raise UsageError("The form is not valid UTF-8 form data.", code="bad_form") from None
        form = dict(fields)
        if not form_token_ok(form, self.token):
            raise _Refused
        return form

    # -- dashboard ---------------------------------------------------------------------------------
    async def dashboard(self, request: Request) -> Response:
        d = None
        if not self.warm.is_set():  # a warm resident service answers while this process loads
            d = await run_in_threadpool(views.served_dashboard, self.project)
        if d is None:
            d = await self.work(views.dashboard, self.project)
        tables = d.get("tables") or {}
        rows = [(tables.get(n) or {}).get("rows", 0) for n in COLLECTIONS]
        cards = "".join(
            f"<div class=card>{e(label)}<b>{e(value)}</b></div>"
            for label, value in (
                ("facts", rows[0]),
                ("episodes", rows[1]),
                ("logs", rows[2]),
                ("files indexed", d["code"]["files"]),
                ("stale memories", d["stale_memories"]),
                ("changed files", "…" if d["code"]["stale"] is None else d["code"]["stale"]),
            )
        )
        svc = d["service"]
        service = (
            f"running (pid {svc.get('pid')}, {svc.get('requests')} requests)" if svc.get("running") else "not running"
        )
        overview = dl(
            [
                ("project", d["project_root"]),
                ("data", d["data_dir"]),
                ("model", d["model"]),
                ("disk", size(d.get("disk_bytes"))),
                ("last write", d.get("last_write") or "never"),
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
            if d.get("from_service")
            else ""
        )
        body = f"<div class=cards>{cards}</div>{links}{overview}<h2>Tables</h2>{per_table}{source}"
        return HTMLResponse(page("Dashboard", body, active="/"))

    # -- lists and search --------------------------------------------------------------------------
    async def memories(self, request: Request) -> Response:
        from contextware.memory.records import list_records

        q = request.query_params
        text = (q.get("q") or "").strip()
        collection = q.get("collection") or None
        kind, topic, source = q.get("kind") or None, q.get("topic") or None, q.get("source") or None
        superseded = q.get("superseded") or None
        since = (q.get("since") or "").strip() or None
        stale = q.get("stale") in ("1", "on", "true", "yes")
        try:
            number = int(q.get("page") or 0)
        except ValueError:
            raise UsageError("The page number must be a whole number.", code="bad_page") from None
        if number < 0:
            raise UsageError("The page number must be 0 or more.", code="bad_page")
        filters = (
            '<form class=filters method=get action="/memories">'
            f'<label>search <input type=search name=q value="{e(text)}"></label>'
            + select("collection", COLLECTIONS, collection, "all")
            + select("kind", FACT_KINDS, kind)
            + f'<label>topic <input name=topic value="{e(topic)}" size=10></label>'
            + f'<label>source <input name=source value="{e(source)}" size=10></label>'
            + f'<label>since <input name=since value="{e(since)}" size=10 placeholder="7d or 2026-11-01"></label>'
            + select("superseded", ("show", "hide", "only"), superseded, "default")
            + f"<label><input type=checkbox name=stale value=1{' checked' if stale else ''}> may be stale</label>"
            + "<button>Apply</button></form>"
        )
        if text:
            return HTMLResponse(
                page(
                    "Search",
                    filters + await self.search(text, collection, kind, topic, since),
                    active="/memories",
                    query=text,
                )
            )
        found = await self.work(
            list_records,
            self.project,
            collection,
            PAGE_SIZE,
            stale=stale,
            kind=kind,
            topic=topic,
            source=source,
            superseded=superseded,
            since=since,
            offset=number * PAGE_SIZE,
        )
        rows = [
            (
                a(f"/memory/{r['id']}", r["id"]),
                e(r["collection"]),
                badge(r),
                f"<span class=text>{e(_short(body_of(r)))}</span>",
                e(", ".join(r.get("topics") or [])),
                e((r.get("created_at") or "")[:16].replace("T", " ")),
            )
            for r in found["records"]
        ]
        params = {
            "collection": collection,
            "kind": kind,
            "topic": topic,
            "source": source,
            "superseded": superseded,
            "stale": "1" if stale else None,
            "since": since,
        }
        pager = []
        if number:
            pager.append(a(url("/memories", **params, page=number - 1 or None), "← newer"))
        if (number + 1) * PAGE_SIZE < found["total"]:
            pager.append(a(url("/memories", **params, page=number + 1), "older →"))
        shown = f"<p class=muted>{found['count']} of {found['total']} memories, newest first. {' · '.join(pager)}</p>"
        listing = (
            table(["id", "in", "", "text", "topics", "saved"], rows, "memories")
            if rows
            else "<p>No memory matches.</p>"
        )
        return HTMLResponse(page("Memories", filters + shown + listing, active="/memories"))

    async def search(
        self, text: str, collection: str | None, kind: str | None, topic: str | None, since: str | None
    ) -> str:
        from contextware.memory.recall import parse_query, recall

        scope = collection or "all"
        query = parse_query(
            text, scope=scope, limit=SEARCH_LIMIT, kind=kind, topic=topic, since=since, include_superseded=True
        )
        result = (await self.work(recall, self.project, query)).to_dict()
        why = a(url("/explain", q=text, scope=scope), "Why these results?")
        if not result["results"]:
            return f"<p>Nothing relevant in memory. {why}</p>"
        rows = []
        for r in result["results"]:
            if r["collection"] == "code_index":
                link = a(url("/code/file", path=r["file_path"]), r["file_path"])
                body = r.get("summary")
            elif r["collection"] in COLLECTIONS:
                link = a(f"/memory/{r['id']}", r["id"])
                body = body_of(r)
            elif r["collection"] == "offloads":
                link = a(f"/offloads/{r['id']}", r["id"])
                body = r.get("summary")
            else:
                link = e(r["id"])
                body = r.get("summary")
            rows.append(
                (
                    link,
                    e(r["collection"]),
                    badge(r),
                    f"<span class=text>{e(_short(body))}</span>",
                    e(f"{r['score']:.3f}"),
                    e(f"{r.get('confidence', 0):.2f}"),
                )
            )
        return f"<p class=muted>{len(rows)} results, best first. {why}</p>" + table(
            ["id", "in", "", "text", "score", "confidence"], rows, "results"
        )

    # -- one memory --------------------------------------------------------------------------------
    async def memory(self, request: Request) -> Response:
        from contextware.memory import records
        from contextware.memory.history import history

        rid = request.path_params["id"]
        record = (await self.work(records.get, self.project, rid))["record"]
        chain = (await self.work(history, self.project, rid)) if record["collection"] == "facts" else None
        shown = {
            k: v
            for k, v in record.items()
            if k not in ("code_links", "may_be_stale", "has_vector", "id") and v not in (None, "", [])
        }
        fields = []
        for k, v in shown.items():
            if k in ("supersedes", "superseded_by") and isinstance(v, str):
                value = a(f"/memory/{v}", v)
            elif k == "session_id" and isinstance(v, str):
                value = a(f"/sessions/{v}", v)
            else:
                value = e(", ".join(map(str, v)) if isinstance(v, list) else v)
            fields.append(f"<dt>{e(k)}</dt><dd>{value}</dd>")
        if not record.get("has_vector"):
            fields.append("<dt>vector</dt><dd>missing: only full-text search finds it (memory reembed)</dd>")
        parts = [f"<p>{badge(record)}</p>", "<dl>" + "".join(fields) + "</dl>"]
        links = record.get("code_links") or []
        if record.get("may_be_stale"):
            parts.append(f"<p class=stale>May be stale: {e(record['may_be_stale'])}</p>")
        if links:
            states = await self.work(views.link_states, self.project, record["collection"], rid)
            parts.append(
                "<h2>Code it names</h2><ul>"
                + "".join(
                    f"<li>{a(url('/code/file', path=p), p)} "
                    f"<span class={'fresh' if states.get(p) == 'unchanged' else 'stale'}>{e(states.get(p, ''))}</span></li>"
                    for p in links
                )
                + "</ul>"
            )
        if chain and len(chain["chain"]) > 1:
            rows = [
                (
                    a(f"/memory/{c['id']}", c["id"]) + (" ← this one" if c["id"] == rid else ""),
                    e(c.get("status") or "active"),
                    e((c.get("created_at") or "")[:16].replace("T", " ")),
                    f"<span class=text>{e(_short(c.get('text')))}</span>",
                )
                for c in chain["chain"]
            ]
            parts.append("<h2>Supersession chain (oldest first)</h2>" + table(["id", "status", "saved", "text"], rows))
            parts += [f"<p class=muted>Missing link: {e(m)}</p>" for m in chain["missing"]]
        actions = [a(f"/memory/{rid}/edit", "Edit")]
        if record["collection"] == "facts":
            actions.append(a(f"/memory/{rid}/supersede", "Supersede"))
        actions.append(a(f"/memory/{rid}/delete", "Delete…"))
        confirm = ""
        if record.get("may_be_stale"):
            confirm = f'<form method=post action="/memory/{e(rid)}/confirm">{hidden(self.token)}<button>It still holds</button></form>'
        parts.insert(0, f"<div class=actions>{' '.join(actions)}{confirm}</div>")
        return HTMLResponse(page(rid, "".join(parts), active="/memories"))

    async def edit(self, request: Request) -> Response:
        from contextware.memory import records

        rid = request.path_params["id"]
        record = (await self.work(records.get, self.project, rid))["record"]
        names = EDITABLE[record["collection"]]

        def current(name: str) -> str:
            value = record.get(name)
            return ", ".join(value) if isinstance(value, list) else str(value or "")

        if request.method == "POST":
            form = await self.form(request)
            changes = {n: form[n] for n in names if n in form and form[n].strip() != current(n).strip()}
            if changes:
                await self.work(records.update, self.project, rid, **changes)
            return RedirectResponse(f"/memory/{rid}", status_code=303)
        fields = "".join(
            f'<label>{e(n)}<br><textarea name="{e(n)}">{e(current(n))}</textarea></label><br>'
            if n in ("text", "summary", "goal")
            else f'<label>{e(n)} <input name="{e(n)}" value="{e(current(n))}"></label><br>'
            for n in names
        )
        body = f'<form method=post action="/memory/{e(rid)}/edit">{hidden(self.token)}{fields}<button>Save</button> {a(f"/memory/{rid}", "Cancel")}</form>'
        return HTMLResponse(page(f"Edit {rid}", body, active="/memories"))

    async def supersede(self, request: Request) -> Response:
        from contextware.memory import records

        rid = request.path_params["id"]
        record = (await self.work(records.get, self.project, rid))["record"]
        if record["collection"] != "facts":
            raise UsageError(f"Only facts are superseded; {rid} is in {record['collection']}.", code="bad_collection")
        if request.method == "POST":
            form = await self.form(request)
            saved = await self.work(
                records.save,
                self.project,
                "fact",
                form.get("text", ""),
                kind=form.get("kind") or record.get("kind"),
                topics=form.get("topics") or None,
                supersedes=rid,
                source="browser",
            )
            new_id = saved.get("id") or saved.get("duplicate_of")
            return RedirectResponse(f"/memory/{new_id}", status_code=303)
        body = (
            f"<p>The new fact replaces <span class=text>{e(record.get('text'))}</span>; the old one is kept, marked superseded.</p>"
            f'<form method=post action="/memory/{e(rid)}/supersede">{hidden(self.token)}'
            f"<label>new text<br><textarea name=text required>{e(record.get('text'))}</textarea></label><br>"
            + select("kind", FACT_KINDS, record.get("kind"), "same")
            + f' <label>topics <input name=topics value="{e(", ".join(record.get("topics") or []))}"></label><br>'
            + f"<button>Save the new fact</button> {a(f'/memory/{rid}', 'Cancel')}</form>"
        )
        return HTMLResponse(page(f"Supersede {rid}", body, active="/memories"))

    async def delete(self, request: Request) -> Response:
        from contextware.memory import records

        rid = request.path_params["id"]
        if request.method == "POST":
            form = await self.form(request)
            if form.get("confirm") != "yes":
                raise UsageError("Tick the box to confirm the deletion; nothing was deleted.", code="not_confirmed")
            done = await self.work(records.delete, self.project, rid)
            extra = (
                f" {a('/memory/' + done['reactivated'], done['reactivated'])} is current again."
                if done.get("reactivated")
                else ""
            )
            body = f"<p role=status>Deleted {e(rid)} from {e(done['collection'])}.{extra}</p><p>{a('/memories', 'Back to the memories')}</p>"
            return HTMLResponse(page("Deleted", body, active="/memories"))
        record = (await self.work(records.get, self.project, rid))["record"]
        body = (
            f"<p>Delete this memory from {e(record['collection'])}? A fact or episode leaves a tombstone so the "
            "deletion travels through export and import.</p>"
            f"<blockquote class=text>{e(body_of(record))}</blockquote>"
            f'<form method=post action="/memory/{e(rid)}/delete">{hidden(self.token)}'
            "<label><input type=checkbox name=confirm value=yes required> Yes, delete it</label> "
            f"<button class=danger>Delete</button> {a(f'/memory/{rid}', 'Cancel')}</form>"
        )
        return HTMLResponse(page(f"Delete {rid}?", body, active="/memories"))

    async def confirm(self, request: Request) -> Response:
        from contextware.memory import records

        rid = request.path_params["id"]
        await self.form(request)
        await self.work(records.confirm, self.project, rid)
        return RedirectResponse(f"/memory/{rid}", status_code=303)

    # -- review queues -----------------------------------------------------------------------------
    async def review(self, request: Request) -> Response:
        q = await self.work(views.review, self.project)

        def still_holds(rid: str) -> str:
            action = f"/memory/{rid}/confirm"
            return f'<form method=post action="{e(action)}">{hidden(self.token)}<button>It still holds</button></form>'

        stale = [
            (
                a(f"/memory/{r['id']}", r["id"]),
                f"<span class=text>{e(_short(body_of(r)))}</span>",
                f"<span class=stale>{e(r.get('may_be_stale'))}</span>",
                still_holds(r["id"])
                + " "
                + a(f"/memory/{r['id']}/edit", "Edit")
                + " "
                + a(f"/memory/{r['id']}/delete", "Delete…"),
            )
            for r in q["stale"]
        ]
        dups = [
            (
                e(f"{p['score']:.2f}"),
                a(f"/memory/{p['older']['id']}", p["older"]["id"])
                + f"<br><span class=text>{e(_short(p['older'].get('text')))}</span>",
                a(f"/memory/{p['newer']['id']}", p["newer"]["id"])
                + f"<br><span class=text>{e(_short(p['newer'].get('text')))}</span>",
                a(f"/memory/{p['older']['id']}/delete", "Delete the older…")
                + " "
                + a(f"/memory/{p['older']['id']}/supersede", "Merge into a new fact…"),
            )
            for p in q["duplicates"]
        ]
        keep = [
            (
                a(f"/memory/{r['id']}", r["id"]),
                f"<span class=text>{e(_short(r.get('text')))}</span>",
                f'<form method=post action="/review/keep/{e(r["id"])}">{hidden(self.token)}'
                + select("kind", FACT_KINDS, "convention", "kind")
                + " <button>Save as a fact</button></form>",
            )
            for r in q["keep"]
        ]
        body = (
            f"<h2>May be stale ({q['stale_total']})</h2><p class=muted>Facts and episodes whose code changed, moved or went away since they were saved.</p>"
            + (table(["id", "memory", "why", ""], stale) if stale else "<p>None.</p>")
            + f"<h2>Near-duplicates ({q['duplicates_total']})</h2><p class=muted>Active facts that say nearly the same (cosine at or over similar_threshold).</p>"
            + (table(["cosine", "older", "newer", ""], dups) if dups else "<p>None.</p>")
            + f"<h2>Turns worth keeping ({q['keep_total']})</h2><p class=muted>What a user said that reads like a convention or a decision, not yet a fact.</p>"
            + (table(["id", "turn", ""], keep) if keep else "<p>None.</p>")
        )
        return HTMLResponse(page("Review", body, active="/review"))

    async def keep(self, request: Request) -> Response:
        from contextware.memory import records

        rid = request.path_params["id"]
        form = await self.form(request)
        record = (await self.work(records.get, self.project, rid))["record"]
        if record["collection"] != "logs":
            raise UsageError(
                f"Only captured turns are kept as facts; {rid} is in {record['collection']}.", code="bad_collection"
            )
        saved = await self.work(
            records.save,
            self.project,
            "fact",
            record.get("text") or "",
            kind=form.get("kind") or "note",
            source="browser",
        )
        return RedirectResponse(f"/memory/{saved.get('id') or saved.get('duplicate_of')}", status_code=303)

    # -- sessions ----------------------------------------------------------------------------------
    async def sessions(self, request: Request) -> Response:
        found = await self.work(views.sessions, self.project)
        rows = [
            (a(f"/sessions/{s['session_id']}", s["session_id"]), e(s["turns"]), e(s["first"]), e(s["last"]))
            for s in found
        ]
        body = table(["session", "turns", "first", "last"], rows) if rows else "<p>No captured session yet.</p>"
        return HTMLResponse(page("Sessions", body, active="/sessions"))

    async def timeline(self, request: Request) -> Response:
        t = await self.work(views.timeline, self.project, request.path_params["sid"])
        parts = []
        for d in t["digests"]:
            parts.append(f"<h2>Digest {a('/memory/' + d['id'], d['id'])}</h2><p class=text>{e(body_of(d))}</p>")
        rows = [
            (
                e((r.get("created_at") or "")[:19].replace("T", " ")),
                e(r.get("role")),
                f"<span class=text>{e(r.get('text'))}</span>",
                a(f"/memory/{r['id']}", r["id"]),
            )
            for r in t["turns"]
        ]
        parts.append(f"<h2>{t['total']} turns</h2>" + table(["when", "role", "text", "id"], rows))
        return HTMLResponse(page(f"Session {t['session_id']}", "".join(parts), active="/sessions"))

    # -- what the prompt hook injected ---------------------------------------------------------------
    async def turns(self, request: Request) -> Response:
        from contextware.memory import decisions

        found = await run_in_threadpool(decisions.recent, self.project)

        def item(x: dict[str, Any], why: str | None = None) -> str:
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
            injected = d.get("injected") or []
            rows.append(
                (
                    e(str(d.get("at") or "").replace("T", " ").rstrip("Z"))
                    + ("<br>" + a(f"/sessions/{sid}", sid) if sid else ""),
                    f"<span class=text>{e(d.get('prompt'))}</span><br>"
                    + a(url("/explain", q=d.get("prompt") or ""), "explain again"),
                    (
                        f"<ul>{''.join(item(x) for x in injected)}</ul>"
                        if injected
                        else "<span class=muted>nothing</span>"
                    ),
                    f"<p>{e(d.get('verdict'))}</p><ul>{''.join(item(x, x.get('why')) for x in d.get('held') or [])}</ul>",
                )
            )
        body = (
            "<p class=muted>What the prompt hook put into each turn's context, and the best of what it held back "
            "(the newest first; the prompt's start only, secrets masked).</p>"
            + (table(["when", "prompt", "injected", "held back"], rows) if rows else "<p>No turn recorded yet.</p>")
        )
        return HTMLResponse(page("Turns", body, active="/turns"))

    # -- offloads -----------------------------------------------------------------------------------
    async def offloads(self, request: Request) -> Response:
        found = await self.work(views.offloads, self.project)
        rows = [
            (
                a(f"/offloads/{o['id']}", o["id"]),
                e(o.get("type")),
                e(o.get("session_name") or "") + (f" #{e(o['turn_number'])}" if o.get("turn_number") else ""),
                f"<span class=text>{e(_short(o.get('prompt'), 200))}</span>",
                e((o.get("created_at") or "")[:16].replace("T", " ")),
            )
            for o in found["offloads"]
        ]
        body = f"<p class=muted>{len(rows)} of {found['total']} offload answers, newest first.</p>" + (
            table(["id", "type", "session", "prompt", "when"], rows) if rows else "<p>No offload yet.</p>"
        )
        return HTMLResponse(page("Offloads", body, active="/offloads"))

    async def offload(self, request: Request) -> Response:
        o = await self.work(views.offload, self.project, request.path_params["id"])
        facts = [
            ("type", o.get("type")),
            ("session", o.get("session_name")),
            ("turn", o.get("turn_number")),
            ("model", o.get("model")),
            ("tokens", o.get("token_count")),
            ("when", o.get("created_at")),
            ("sources", ", ".join(o.get("source_paths") or [])),
            ("topics", ", ".join(o.get("topics") or [])),
            ("answer file", o.get("full_response_path")),
        ]
        parts = [
            dl([(k, v) for k, v in facts if v not in (None, "")]),
            f"<h2>Prompt</h2><p class=text>{e(o.get('prompt'))}</p>",
            f"<h2>Summary</h2><p class=text>{e(o.get('summary'))}</p>",
            "<h2>Full answer</h2>"
            + (
                f"<pre class=text>{e(o['answer'])}</pre>"
                if o.get("answer") is not None
                else f"<p>{e(o.get('note'))}</p>"
            ),
        ]
        return HTMLResponse(page(f"Offload {o['id']}", "".join(parts), active="/offloads"))

    # -- the code map ------------------------------------------------------------------------------
    async def code(self, request: Request) -> Response:
        m = await self.work(views.code_map, self.project, request.query_params.get("folder"))
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
        return HTMLResponse(page("Code", body, active="/code"))

    async def code_file(self, request: Request) -> Response:
        path = request.query_params.get("path") or ""
        if not path:
            raise UsageError("Name a file: /code/file?path=src/app.py.", code="bad_path")
        f = await self.work(views.code_file, self.project, path)
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
                (a(f"/memory/{r['id']}", r["id"]), badge(r), f"<span class=text>{e(_short(body_of(r)))}</span>")
                for r in f["memories"]
            ]
            parts.append("<h2>Memories that name it</h2>" + table(["id", "", "text"], rows))
        return HTMLResponse(page(f["file_path"], "".join(parts), active="/code"))

    # -- why this ----------------------------------------------------------------------------------
    async def explain(self, request: Request) -> Response:
        from contextware.memory.recall import SCOPES, parse_query, recall

        text = (request.query_params.get("q") or "").strip()
        scope = request.query_params.get("scope") or "all"
        form = (
            '<form class=filters method=get action="/explain">'
            f'<label>question <input type=search name=q value="{e(text)}" size=50></label>'
            + select("scope", tuple(SCOPES), scope, "all")
            + "<button>Explain</button></form>"
        )
        if not text:
            return HTMLResponse(
                page(
                    "Why this, why not that",
                    form + "<p>Ask a question to see how recall ranked and gated every candidate.</p>",
                    active="/explain",
                )
            )
        query = parse_query(text, scope=scope)
        result = (await self.work(recall, self.project, query, explain=True)).to_dict()
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
        return HTMLResponse(page("Why this, why not that", body, active="/explain", query=text))


class _Refused(ContextwareError):
    """A POST whose form lacks the run's token."""

    def __init__(self) -> None:
        super().__init__("The form lacks this run's token: reload the page and try again.", code="forbidden")
