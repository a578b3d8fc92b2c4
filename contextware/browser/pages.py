"""The browser's routes.  Each page calls the functions the CLI and MCP call (``memory.records``
list/get/update/delete/save, ``memory.history``, ``memory.recall``) or a read model of ``views``,
in a worker thread, one at a time (the project's database and model are shared by every page).
Writes are POST only and need the token in the form as well; a bad id or filter is a page with
one sentence, never a traceback."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from contextware.browser import bodies, views
from contextware.browser.bodies import COLLECTIONS, badge, body_of, short
from contextware.browser.guard import form_token_ok
from contextware.browser.html import a, dl, e, error_page, hidden, page, select, table, url
from contextware.browser.models import UseRow
from contextware.core.errors import ContextwareError, NotFoundError, UsageError, internal_error

if TYPE_CHECKING:
    from contextware.memory.results import GoneBranch
    from contextware.storage.project import Project

PAGE_SIZE = 50
SEARCH_LIMIT = 20
MAX_FORM_BYTES = 1_000_000
MAX_FORM_FIELDS = 40
FACT_KINDS = ("preference", "constraint", "decision", "convention", "environment", "note")
STATIC = Path(__file__).parent / "static"
EDITABLE = {  # what the edit form offers per collection (edits.update takes the same)
    "facts": ("text", "kind", "topics"),
    "episodes": ("goal", "result", "category", "summary", "topics"),
    "logs": ("text", "role"),
}

Handler = Callable[[Request], Awaitable[Response]]
P = ParamSpec("P")
T = TypeVar("T")


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

    async def work(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        def call() -> T:
            with self.lock:
                return fn(*args, **kwargs)

        return await run_in_threadpool(call)

    def routes(self) -> list[BaseRoute]:
        def guarded(handler: Handler) -> Handler:
            async def run(request: Request) -> Response:
                try:
                    return await handler(request)
                except ContextwareError as exc:
                    from contextware.core.redact import redact_error

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
            Route("/review/promote", guarded(self.promote), methods=["POST"]),
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
        served = None
        if not self.warm.is_set():  # a warm resident service answers while this process loads
            served = await run_in_threadpool(views.served_dashboard, self.project)
        d = served if served is not None else await self.work(views.dashboard, self.project)
        body = bodies.dashboard(d)
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
        branch = (q.get("branch") or "").strip() or None  # search only: current (default), any or a name
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
            + f'<label>branch <input name=branch value="{e(branch)}" size=10 placeholder="current, any"></label>'
            + "<button>Apply</button></form>"
        )
        if text:
            return HTMLResponse(
                page(
                    "Search",
                    filters + await self.search(text, collection, kind, topic, since, branch),
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
                f"<span class=text>{e(short(body_of(r)))}</span>",
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
        self,
        text: str,
        collection: str | None,
        kind: str | None,
        topic: str | None,
        since: str | None,
        branch: str | None = None,
    ) -> str:
        from contextware.memory.recall import parse_query, recall

        scope = collection or "all"
        query = parse_query(
            text,
            scope=scope,
            limit=SEARCH_LIMIT,
            kind=kind,
            topic=topic,
            since=since,
            include_superseded=True,
            branch=branch,
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
                    badge(r) + (f" <span class=stale>{e(r['branch_note'])}</span>" if r.get("branch_note") else ""),
                    f"<span class=text>{e(short(body))}</span>",
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
                    f"<span class=text>{e(short(c.get('text')))}</span>",
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
        from contextware.memory import edits, records

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
                await self.work(edits.update, self.project, rid, **changes)
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
        from contextware.memory import edits, records

        rid = request.path_params["id"]
        if request.method == "POST":
            form = await self.form(request)
            if form.get("confirm") != "yes":
                raise UsageError("Tick the box to confirm the deletion; nothing was deleted.", code="not_confirmed")
            done = await self.work(edits.delete, self.project, rid)
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
        from contextware.memory import edits

        rid = request.path_params["id"]
        await self.form(request)
        await self.work(edits.confirm, self.project, rid)
        return RedirectResponse(f"/memory/{rid}", status_code=303)

    # -- review queues -----------------------------------------------------------------------------
    async def review(self, request: Request) -> Response:
        from contextware.memory.branches import gone_branches

        q = await self.work(views.review, self.project)
        gone = await self.work(gone_branches, self.project)

        def still_holds(rid: str) -> str:
            action = f"/memory/{rid}/confirm"
            return f'<form method=post action="{e(action)}">{hidden(self.token)}<button>It still holds</button></form>'

        stale = [
            (
                a(f"/memory/{r['id']}", r["id"]),
                f"<span class=text>{e(short(body_of(r)))}</span>",
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
                + f"<br><span class=text>{e(short(p['older'].get('text')))}</span>",
                a(f"/memory/{p['newer']['id']}", p["newer"]["id"])
                + f"<br><span class=text>{e(short(p['newer'].get('text')))}</span>",
                a(f"/memory/{p['older']['id']}/delete", "Delete the older…")
                + " "
                + a(f"/memory/{p['older']['id']}/supersede", "Merge into a new fact…"),
            )
            for p in q["duplicates"]
        ]
        keep = [
            (
                a(f"/memory/{r['id']}", r["id"]),
                f"<span class=text>{e(short(r.get('text')))}</span>",
                f'<form method=post action="/review/keep/{e(r["id"])}">{hidden(self.token)}'
                + select("kind", FACT_KINDS, "convention", "kind")
                + " <button>Save as a fact</button></form>",
            )
            for r in q["keep"]
        ]

        def use_row(r: UseRow) -> tuple[str, ...]:
            text = r.get("text")
            return (
                a(f"/memory/{r['id']}", r["id"]),
                f"<span class=text>{e(short(text))}</span>" if text else "<span class=muted>(no longer stored)</span>",
                e(r.get("injected") or 0),
                e(r.get("used") or 0),
                e(r.get("fetched") or 0),
                e(r.get("last_used") or "never"),
            )

        use_head = ["id", "memory", "injected", "used", "fetched", "last used"]
        body = (
            f"<h2>Injected often, never used ({len(q['unused'])})</h2><p class=muted>Memories the prompt hook "
            + "injected five times or more that no answer or tool call used: still true, still worth a place?</p>"
            + (table(use_head, [use_row(r) for r in q["unused"]]) if q["unused"] else "<p>None.</p>")
            + f"<h2>Used often ({len(q['used_often'])})</h2><p class=muted>Memories the agent used five times or more.</p>"
            + (table(use_head, [use_row(r) for r in q["used_often"]]) if q["used_often"] else "<p>None.</p>")
            + f"<h2>May be stale ({q['stale_total']})</h2><p class=muted>Facts and episodes whose code changed, moved or went away since they were saved.</p>"
            + (table(["id", "memory", "why", ""], stale) if stale else "<p>None.</p>")
            + f"<h2>Near-duplicates ({q['duplicates_total']})</h2><p class=muted>Active facts that say nearly the same (cosine at or over similar_threshold).</p>"
            + (table(["cosine", "older", "newer", ""], dups) if dups else "<p>None.</p>")
            + f"<h2>Turns worth keeping ({q['keep_total']})</h2><p class=muted>What a user said that reads like a convention or a decision, not yet a fact.</p>"
            + (table(["id", "turn", ""], keep) if keep else "<p>None.</p>")
            + f"<h2>Branches deleted without merging ({len(gone)})</h2><p class=muted>Their memories are hidden "
            + "from every checkout; promote them to make them everyone's (branch_memory_days old or more).</p>"
            + (
                table(["branch", "memories", "newest", ""], [self._gone_row(g) for g in gone])
                if gone
                else "<p>None.</p>"
            )
        )
        return HTMLResponse(page("Review", body, active="/review"))

    def _gone_row(self, g: "GoneBranch") -> tuple[str, ...]:
        button = (
            f'<form method=post action="/review/promote">{hidden(self.token)}'
            f'<input type=hidden name=branch value="{e(g["branch"])}"><button>Promote to everyone\'s</button></form>'
        )
        name = e(g["branch"]) + (
            " <span class=fresh>squash-merged: its changes are in HEAD</span>" if g.get("squashed") else ""
        )
        return (name, e(str(g["memories"])), e(str(g["newest"])[:16].replace("T", " ")), button)

    async def promote(self, request: Request) -> Response:
        from contextware.memory.branches import promote

        form = await self.form(request)
        await self.work(promote, self.project, form.get("branch") or "")
        return RedirectResponse("/review", status_code=303)

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
        from contextware.memory.turns import decisions

        found = await run_in_threadpool(decisions.recent, self.project)

        body = bodies.turns(found)
        return HTMLResponse(page("Turns", body, active="/turns"))

    # -- offloads -----------------------------------------------------------------------------------
    async def offloads(self, request: Request) -> Response:
        found = await self.work(views.offloads, self.project)
        rows = [
            (
                a(f"/offloads/{o['id']}", o["id"]),
                e(o.get("type")),
                e(o.get("session_name") or "") + (f" #{e(o['turn_number'])}" if o.get("turn_number") else ""),
                f"<span class=text>{e(short(o.get('prompt'), 200))}</span>",
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
        body = bodies.code_map(m)
        return HTMLResponse(page("Code", body, active="/code"))

    async def code_file(self, request: Request) -> Response:
        path = request.query_params.get("path") or ""
        if not path:
            raise UsageError("Name a file: /code/file?path=src/app.py.", code="bad_path")
        f = await self.work(views.code_file, self.project, path)
        return HTMLResponse(page(f["file_path"], bodies.code_file(f, path), active="/code"))

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
        body = bodies.explanation(result, form)
        return HTMLResponse(page("Why this, why not that", body, active="/explain", query=text))


class _Refused(ContextwareError):
    """A POST whose form lacks the run's token."""

    def __init__(self) -> None:
        super().__init__("The form lacks this run's token: reload the page and try again.", code="forbidden")
