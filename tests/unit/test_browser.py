"""The memory browser against a real project (real LanceDB, the bundled model), served by the real
server in a thread: who may talk to it, what it escapes, and that its writes are the CLI's writes."""

from __future__ import annotations

import re

import pytest

from contextware.memory import records
from contextware.memory.team import tombstones
from contextware.memory.turns import decisions
from tests.support.browser import form_token, request, saved_memories, served_browser


@pytest.fixture
def memories(project):
    return saved_memories(project)


@pytest.fixture
def browser(project, memories):
    with served_browser(project) as served:
        yield served


@pytest.mark.slow
def test_the_token_is_required_and_moves_from_the_url_to_a_strict_cookie(browser):
    port, token = browser.port, browser.token
    for path in ("/", "/memories", "/static/ui.css", "/explain?q=x", "/nope"):
        assert request(port, path).status == 403, path
    assert request(port, "/?token=wrong").status == 403
    assert request(port, "/", token=token[:-1] + ("A" if token[-1] != "A" else "B")).status == 403
    first = request(port, f"/memories?token={token}&collection=facts")
    assert first.status == 303
    assert first.headers["location"] == "/memories?collection=facts"  # the token leaves the address bar
    cookie = first.headers["set-cookie"]
    assert f"contextware_{port}={token}" in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    page = request(port, "/", token=token)
    assert page.status == 200 and "Dashboard" in page.text
    assert request(port, "/static/ui.css", token=token).status == 200


@pytest.mark.slow
def test_foreign_host_origin_and_site_are_refused(browser):
    port, token = browser.port, browser.token
    assert request(port, "/", token=token, host=f"localhost:{port}").status == 200
    for host in ("evil.example", f"evil.example:{port}", f"127.0.0.1:{port + 1}", f"127.0.0.1.evil.example:{port}", ""):
        assert request(port, "/", token=token, host=host).status == 403, host
    for origin in ("http://evil.example", f"http://127.0.0.1:{port + 1}", "null", f"https://127.0.0.1:{port}"):
        assert request(port, "/", token=token, origin=origin).status == 403, origin
    assert request(port, "/", token=token, headers={"Sec-Fetch-Site": "cross-site"}).status == 403
    # "Origin: null" is what a browser's own form post says under no-referrer: only same-origin.
    assert request(port, "/", token=token, origin="null", headers={"Sec-Fetch-Site": "same-origin"}).status == 200
    assert request(port, "/", token=token, origin="null", headers={"Sec-Fetch-Site": "cross-site"}).status == 403
    assert request(port, "/", token=token, method="PUT").status == 403


@pytest.mark.slow
def test_every_answer_carries_the_security_headers(browser):
    for answer in (request(browser.port, "/", token=browser.token), request(browser.port, "/")):
        assert answer.headers["content-security-policy"].startswith("default-src 'self'; frame-ancestors 'none'")
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["referrer-policy"] == "no-referrer"


@pytest.mark.slow
def test_only_the_loopback_interface_is_bound(browser):
    from tests.support.browser import listening_addresses

    assert listening_addresses(browser.port) == ["0100007F"]  # 127.0.0.1, nothing else, no IPv6


@pytest.mark.slow
def test_a_planted_script_is_shown_as_text_everywhere(browser, memories):
    port, token = browser.port, browser.token
    pages = [
        "/memories",
        f"/memory/{memories['planted']}",
        f"/memory/{memories['planted']}/edit",
        f"/memory/{memories['planted']}/delete",
        "/memories?q=alert+owned+quotes+ampersands",
        "/explain?q=alert+owned+quotes+ampersands",
    ]
    for path in pages:
        page = request(port, path, token=token)
        assert page.status == 200, path
        assert "&lt;script&gt;alert(&quot;owned&quot;)&lt;/script&gt;" in page.text, path
        assert "<script>alert" not in page.text and "<img" not in page.text, path
        assert re.findall(r"<script[^>]*>", page.text) == ['<script src="/static/ui.js" defer>'], path


@pytest.mark.slow
def test_pages_answer_and_bad_input_is_one_sentence(browser, memories):
    port, token = browser.port, browser.token
    for path in (
        "/",
        "/memories?collection=facts&kind=decision",
        "/memories?superseded=only",
        "/memories?stale=1",
        "/memories?topic=testing",
        "/memories?source=agent&page=0",
        "/sessions",
        "/sessions/sess-1",
        "/code",
        "/explain",
        f"/memory/{memories['newer']}",
    ):
        assert request(port, path, token=token).status == 200, path
    for path, status, words in (
        ("/memory/fact-000000000000", 404, "No memory has the id fact-000000000000."),
        ("/memory/not-an-id", 404, "No memory has the id"),
        ("/memories?kind=bogus", 400, "Unknown kind"),
        ("/memories?since=yesterday", 400, "is not a date"),
        ("/memories?page=-1", 400, "The page number must be 0 or more."),
        ("/memories?superseded=maybe", 400, "Unknown superseded"),
        ("/code?folder=../etc", 400, "without"),
        ("/code/file?path=nothing.py", 404, "The code index has no file"),
        ("/sessions/nobody", 404, "No captured turn"),
        ("/explain?q=x&scope=everything", 400, "scope"),
    ):
        page = request(port, path, token=token)
        assert page.status == status, (path, page.text)
        assert words in page.text.replace("&#x27;", "'") and "Traceback" not in page.text, path


@pytest.mark.slow
def test_one_memory_shows_its_supersession_chain(browser, memories):
    page = request(browser.port, f"/memory/{memories['deploy']}", token=browser.token).text
    assert "Supersession chain" in page and memories["newer"] in page and "Fly.io" in page and "Render" in page


@pytest.mark.slow
def test_search_is_recall_and_why_names_the_deciding_numbers(browser, memories):
    port, token = browser.port, browser.token
    found = request(port, "/memories?q=how+do+we+run+the+tests", token=token).text
    assert memories["tests"] in found and "results, best first" in found
    why = request(port, "/explain?q=how+do+we+run+the+tests", token=token).text
    assert "Answered: the best confidence" in why and "shown at 1" in why
    none = request(port, "/explain?q=which+kubernetes+namespace+holds+the+redis+cluster", token=token).text
    assert "Nothing answered" in none and re.search(r"&lt; (floor|gate)? ?0\.\d+|below the gate", none)


@pytest.mark.slow
def test_a_post_without_the_form_token_or_the_confirmation_deletes_nothing(browser, project, memories):
    port, token = browser.port, browser.token
    rid = memories["tests"]
    assert request(port, f"/memory/{rid}/delete", method="POST", token=token, form={"confirm": "yes"}).status == 403
    bad = request(port, f"/memory/{rid}/delete", method="POST", token=token, form={"confirm": "yes", "token": "x" * 43})
    assert bad.status == 403
    cross = request(
        port,
        f"/memory/{rid}/delete",
        method="POST",
        token=token,
        origin="http://evil.example",
        form={"confirm": "yes", "token": token},
    )
    assert cross.status == 403
    unconfirmed = request(port, f"/memory/{rid}/delete", method="POST", token=token, form={"token": token})
    assert unconfirmed.status == 400 and "nothing was deleted" in unconfirmed.text
    assert request(port, f"/memory/{rid}/delete", token=token).status == 200  # GET only asks
    assert records.get(project, rid)["record"]["id"] == rid


@pytest.mark.slow
def test_a_confirmed_delete_is_recorded_like_the_cli_one(browser, project, memories, script):
    port, token = browser.port, browser.token
    page = request(port, f"/memory/{memories['tests']}/delete", token=token).text
    done = request(
        port,
        f"/memory/{memories['tests']}/delete",
        method="POST",
        token=token,
        origin=f"http://127.0.0.1:{port}",
        form={"token": form_token(page), "confirm": "yes"},
    )
    assert done.status == 200 and f"Deleted {memories['tests']} from facts." in done.text
    cli = script("memory", "delete", memories["episode"]).json
    assert cli["deleted"] is True
    stones = tombstones.load(project)
    assert set(stones) >= {memories["tests"], memories["episode"]}
    assert stones[memories["tests"]].keys() == stones[memories["episode"]].keys()
    assert script("memory", "get", memories["tests"]).json["error"]["code"] == "not_found"
    # Deleting the newer fact of a chain makes the one it replaced current again, as the CLI does.
    done = request(
        port, f"/memory/{memories['newer']}/delete", method="POST", token=token, form={"token": token, "confirm": "yes"}
    )
    assert memories["deploy"] in done.text and "is current again" in done.text
    assert records.get(project, memories["deploy"])["record"]["status"] == "active"


@pytest.mark.slow
def test_an_edit_and_a_supersede_are_visible_to_recall_and_history_at_once(browser, project, memories):
    from contextware.memory.history import history
    from contextware.memory.recall import ask

    port, token = browser.port, browser.token
    rid = memories["tests"]
    edited = request(
        port,
        f"/memory/{rid}/edit",
        method="POST",
        token=token,
        form={
            "token": token,
            "text": "We run the tests with pytest -n 4 and the flaky marker.",
            "kind": "convention",
            "topics": "testing",
        },
    )
    assert edited.status == 303 and edited.headers["location"] == f"/memory/{rid}"
    assert "pytest -n 4" in records.get(project, rid)["record"]["text"]
    answer = ask(project, "how many workers does pytest use?")
    assert answer["results"][0]["id"] == rid and "-n 4" in answer["results"][0]["text"]
    moved = request(
        port,
        f"/memory/{rid}/supersede",
        method="POST",
        token=token,
        form={"token": token, "text": "We run the tests with nox now.", "kind": "", "topics": "testing"},
    )
    assert moved.status == 303
    new_id = moved.headers["location"].rsplit("/", 1)[1]
    chain = history(project, new_id)
    assert [c["id"] for c in chain["chain"]] == [rid, new_id] and chain["current"] == new_id


@pytest.mark.slow
def test_the_code_map_and_a_file(project, memories, project_dir):
    from contextware.codeindex.indexer import crawl

    (project_dir / "src" / "app").mkdir(parents=True)
    (project_dir / "src" / "app" / "retry.py").write_text(
        '"""Retry with backoff."""\n\n\ndef backoff_delay(n):\n    return 2**n\n'
    )
    (project_dir / "README.md").write_text("# Demo\n\nA demo project.\n")
    crawl(project, summarizer="local")
    linked = records.save(project, "fact", "Retries use `backoff_delay` in src/app/retry.py.", kind="convention")["id"]
    (project_dir / "README.md").write_text("# Demo\n\nChanged since the crawl.\n")
    crawl(project, summarizer="local")  # README.md indexed again; then retry.py changes under the memory
    (project_dir / "src" / "app" / "retry.py").write_text(
        '"""Retry with jitter."""\n\n\ndef backoff_delay(n):\n    return 3**n\n'
    )
    crawl(project, summarizer="local")
    (project_dir / "README.md").write_text("# Demo\n\nChanged since the crawl.\n\n")
    for _ in range(2):  # two turns whose context got retry.py (the prompt hook's record)
        decisions.record(project, {"injected": [{"id": "src/app/retry.py", "collection": "code_index"}]})
    with served_browser(project) as served:
        root = request(served.port, "/code", token=served.token).text
        assert "src/" in root and "README.md" in root and "changed" in root
        assert re.search(r"src/</a>(?:(?!</tr>).)*<td>2</td></tr>", root)  # recalled twice under src/
        folder = request(served.port, "/code?folder=src/app", token=served.token).text
        assert "retry.py" in folder and "5 lines" in folder and "fresh" in folder
        assert re.search(r"retry.py</a>(?:(?!</tr>).)*<td>2</td></tr>", folder)
        file = request(served.port, "/code/file?path=src/app/retry.py", token=served.token).text
        assert "backoff_delay" in file and "Retries use" in file and "Retry with jitter" in file
        queue = request(served.port, "/review", token=served.token).text
        assert "May be stale (1)" in queue and linked in queue
        shown = request(served.port, f"/memory/{linked}", token=served.token).text
        assert "Code it names" in shown and "<span class=stale>changed since saved</span>" in shown
        held = request(
            served.port, f"/memory/{linked}/confirm", method="POST", token=served.token, form={"token": served.token}
        )
        assert held.status == 303 and "may_be_stale" not in records.get(project, linked)["record"]
        shown = request(served.port, f"/memory/{linked}", token=served.token).text
        assert "<span class=fresh>unchanged</span>" in shown
        assert "May be stale (0)" in request(served.port, "/review", token=served.token).text


@pytest.mark.slow
def test_review_queues_near_duplicates_and_turns_worth_keeping(project, memories):
    near = [
        records.save(project, "fact", text, kind="decision")["id"]
        for text in (
            "We deploy with fly deploy from the main branch.",
            "We deploy using fly deploy from the main branch only.",
        )
    ]
    said = records.save(
        project, "log", "From now on we always run ruff format before committing.", session_id="s2", role="user"
    )["id"]
    asked = records.save(project, "log", "Should we always run ruff before committing?", session_id="s2", role="user")[
        "id"
    ]
    with served_browser(project) as served:
        port, token = served.port, served.token
        queue = request(port, "/review", token=token).text
        dups = queue.split("Near-duplicates", 1)[1].split("Turns worth keeping", 1)[0]
        assert near[0] in dups and near[1] in dups and memories["tests"] not in dups
        keep = queue.split("Turns worth keeping", 1)[1]
        assert said in keep and asked not in keep
        kept = request(
            port, f"/review/keep/{said}", method="POST", token=token, form={"token": token, "kind": "convention"}
        )
        assert kept.status == 303
        fact = records.get(project, kept.headers["location"].rsplit("/", 1)[1])["record"]
        assert (
            fact["text"] == "From now on we always run ruff format before committing." and fact["kind"] == "convention"
        )
        assert said not in request(port, "/review", token=token).text.split("Turns worth keeping", 1)[1]
        refused = request(port, f"/review/keep/{memories['tests']}", method="POST", token=token, form={"token": token})
        assert refused.status == 400 and "Only captured turns" in refused.text


@pytest.mark.slow
def test_since_narrows_the_list_and_the_search(project, memories):
    from contextware.core.text import utcnow
    from contextware.memory.records import list_records

    assert list_records(project, since="1d")["total"] == list_records(project)["total"] == 6
    assert list_records(project, since=f"{utcnow().year + 1}-01-01")["total"] == 0
    with served_browser(project) as served:
        listed = request(served.port, "/memories?since=1h", token=served.token).text
        assert memories["tests"] in listed
        found = request(served.port, "/memories?q=how+do+we+run+the+tests&since=1h", token=served.token).text
        assert memories["tests"] in found


@pytest.mark.slow
def test_forms_are_bounded_and_urlencoded(browser, project, memories):
    port, token = browser.port, browser.token
    rid = memories["tests"]
    big = request(
        port, f"/memory/{rid}/edit", method="POST", token=token, form={"token": token, "text": "x" * 1_100_000}
    )
    assert big.status == 400 and "The form is too large." in big.text
    multipart = request(
        port,
        f"/memory/{rid}/delete",
        method="POST",
        token=token,
        headers={"Content-Type": "multipart/form-data; boundary=x"},
    )
    assert multipart.status == 400 and "application/x-www-form-urlencoded" in multipart.text
    assert records.get(project, rid)["record"]["text"] == "We run the tests with pytest -n 2."


def test_the_browser_is_opened_without_the_token_on_a_command_line(monkeypatch):
    """``ps`` shows every user's command lines: the browser gets a private file that redirects."""
    import stat
    import webbrowser
    from pathlib import Path
    from urllib.parse import urlparse

    from contextware.browser.server import Served, open_privately

    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", opened.append)  # never a real browser in tests
    served = Served(port=4242, token="s3cret-token-value")
    open_privately(served)
    assert len(opened) == 1 and opened[0].startswith("file://") and served.token not in opened[0]
    page = Path(urlparse(opened[0]).path)
    assert stat.S_IMODE(page.stat().st_mode) == 0o600 and stat.S_IMODE(page.parent.stat().st_mode) == 0o700
    assert f'content="0;url={served.url}"' in page.read_text()


@pytest.mark.slow
def test_the_cookie_is_bound_to_this_servers_secret_path(browser):
    """Cookies are not isolated by port: one with ``Path=/`` went to every server on 127.0.0.1.
    Every page lives under this run's secret prefix, the cookie's only path."""
    from contextware.browser.guard import run_prefix

    port, token = browser.port, browser.token
    prefix = run_prefix(token)
    assert browser.base == f"http://127.0.0.1:{port}{prefix}/" and len(prefix) == 20
    first = request(port, f"{prefix}/?token={token}", raw=True)
    assert first.status == 303 and first.headers["location"] == f"{prefix}/"
    assert f"Path={prefix}" in first.headers["set-cookie"] and "Path=/;" not in first.headers["set-cookie"]
    assert request(port, "/", token=token, raw=True).status == 403  # outside the prefix: no page
    assert request(port, "/memories", token=token, raw=True).status == 403
    page = request(port, f"{prefix}/", token=token, raw=True)
    assert page.status == 200 and "Dashboard" in page.text
    links = re.findall(r'(?:href|action|src)="(/[^"]*)"', page.text)
    assert links and all(link.startswith(prefix + "/") for link in links), links
    assert int(page.headers["content-length"]) == len(page.text.encode())


@pytest.mark.slow
@pytest.mark.parametrize("evil", ["//evil.example/", "/\\evil.example/", "///evil.example/x", "/\\/evil.example"])
def test_the_token_stripping_redirect_stays_on_this_server(browser, evil):
    from contextware.browser.guard import run_prefix

    port, token = browser.port, browser.token
    prefix = run_prefix(token)
    answer = request(port, f"{prefix}{evil}?token={token}", raw=True)
    assert answer.status == 303
    location = answer.headers["location"]
    assert location.startswith(prefix + "/") and "//" not in location and "\\" not in location, location
    assert request(port, f"{evil}?token={token}", raw=True).status == 403  # outside the prefix


@pytest.mark.slow
def test_a_pages_own_redirect_keeps_the_prefix(browser, memories):
    from contextware.browser.guard import run_prefix

    port, token = browser.port, browser.token
    prefix = run_prefix(token)
    rid = memories["tests"]
    page = request(port, f"{prefix}/memory/{rid}/edit", token=token, raw=True)
    form = {"token": form_token(page.text), "text": "We run the tests with pytest -n 4.", "kind": "convention"}
    saved = request(port, f"{prefix}/memory/{rid}/edit", token=token, method="POST", form=form, raw=True)
    assert saved.status == 303 and saved.headers["location"].startswith(f"{prefix}/memory/"), saved.headers
