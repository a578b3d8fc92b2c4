"""The memory browser in a real headless Chromium (Debian's ``chromium`` and ``chromium-driver``,
which .ci/run installs): the dashboard renders, a search finds a memory, the memory opens, an edit
and a supersede are saved, a delete with its confirmation removes it from the real store, the
explanation, the map and the review queue draw (a screenshot of each page is not blank), and a
planted script never runs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.browser import saved_memories, served_browser

CHROMIUM = Path("/usr/bin/chromium")
DRIVER = Path("/usr/bin/chromedriver")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,900",
)

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists() or not (DRIVER.exists() or shutil.which("chromedriver")),
    reason="Debian's chromium and chromium-driver are not installed (.ci/run installs them)",
)


@pytest.fixture
def chromium(tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(
        service=Service(str(DRIVER if DRIVER.exists() else shutil.which("chromedriver"))), options=options
    )
    driver.set_page_load_timeout(60)
    driver.implicitly_wait(10)  # find_element waits for the page a click submitted
    try:
        yield driver
    finally:
        driver.quit()


@pytest.mark.slow
def test_search_open_and_delete_in_a_real_browser(project, chromium):
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    from contextware.core.errors import NotFoundError
    from contextware.memory import records

    ids = saved_memories(project)
    with served_browser(project) as served:
        chromium.get(served.url)
        assert chromium.current_url == served.base  # the token moved to the cookie
        assert chromium.title.startswith("Dashboard")
        assert len(chromium.get_screenshot_as_png()) > 10_000  # something was drawn
        assert chromium.find_element(By.CSS_SELECTOR, "header strong").value_of_css_property("font-weight") in (
            "700",
            "bold",
        )

        box = chromium.find_element(By.CSS_SELECTOR, "header input[name=q]")
        box.send_keys("how do we run the tests")
        box.submit()
        chromium.find_element(By.CSS_SELECTOR, "table.results")
        chromium.find_element(By.LINK_TEXT, ids["tests"]).click()
        assert chromium.title.startswith(ids["tests"])
        assert "pytest -n 2" in chromium.find_element(By.TAG_NAME, "main").text

        chromium.find_element(By.LINK_TEXT, "Delete…").click()
        chromium.find_element(By.CSS_SELECTOR, "input[name=confirm]").click()
        chromium.find_element(By.CSS_SELECTOR, "button.danger").click()
        assert f"Deleted {ids['tests']} from facts." in chromium.find_element(By.CSS_SELECTOR, "[role=status]").text
        with pytest.raises(NotFoundError):
            records.get(project, ids["tests"])

        chromium.get(f"{served.base}memory/{ids['planted']}")
        assert '<script>alert("owned")</script>' in chromium.find_element(By.TAG_NAME, "main").text
        with pytest.raises(NoAlertPresentException):
            chromium.switch_to.alert.text  # noqa: B018 - the planted script did not run

        chromium.get(f"{served.base}explain?q=how+do+deploys+work")
        assert "candidates" in chromium.find_element(By.TAG_NAME, "main").text
        assert len(chromium.get_screenshot_as_png()) > 10_000


def _drawn(driver) -> bool:
    """The page's screenshot is not one flat colour (something was rendered)."""
    import struct
    import zlib

    png = driver.get_screenshot_as_png()
    # The first IDAT chunk's decompressed rows: more than one distinct byte value means pixels differ.
    pos, data = 8, b""
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos : pos + 8])
        if kind == b"IDAT":
            data += png[pos + 8 : pos + 8 + length]
        pos += 12 + length
    return len(set(zlib.decompress(data)[:200_000])) > 8


@pytest.mark.slow  # over 7 s: the full suite runs it, the fast subset does not
def test_edit_supersede_explain_map_and_review_in_a_real_browser(project, project_dir, chromium):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    from contextware.codeindex.indexer import crawl
    from contextware.memory import records
    from contextware.memory.history import history
    from contextware.memory.turns import decisions

    (project_dir / "src").mkdir()
    (project_dir / "src" / "retry.py").write_text(
        '"""Retry with backoff."""\n\n\ndef backoff_delay(n):\n    return 2**n\n'
    )
    crawl(project, summarizer="local")
    ids = saved_memories(project)
    decisions.record(
        project,
        {
            "at": "2026-11-26T00:00:00Z",
            "session": "sess-1",
            "prompt": "where do deploys go?",
            "verdict": "Answered: the best confidence 0.900 reaches the gate 0.25.",
            "injected": [{"id": ids["newer"], "collection": "facts", "score": 0.7, "confidence": 0.9}],
            "held": [],
        },
    )
    with served_browser(project) as served:
        chromium.get(served.url)
        assert _drawn(chromium)
        chromium.get(f"{served.base}memory/{ids['tests']}/edit")
        text = chromium.find_element(By.CSS_SELECTOR, "textarea[name=text]")
        text.clear()
        text.send_keys("We run the tests with pytest -n 4.")
        chromium.find_element(By.CSS_SELECTOR, "main form button").click()
        WebDriverWait(chromium, 20).until(expected_conditions.url_to_be(f"{served.base}memory/{ids['tests']}"))
        assert records.get(project, ids["tests"])["record"]["text"] == "We run the tests with pytest -n 4."

        chromium.find_element(By.LINK_TEXT, "Supersede").click()
        new = chromium.find_element(By.CSS_SELECTOR, "textarea[name=text]")
        new.clear()
        new.send_keys("We run the tests with nox.")
        chromium.find_element(By.CSS_SELECTOR, "main form button").click()
        WebDriverWait(chromium, 20).until(lambda d: not d.current_url.endswith("/supersede"))
        new_id = chromium.current_url.rsplit("/", 1)[1]
        assert [c["id"] for c in history(project, new_id)["chain"]] == [ids["tests"], new_id]
        assert "Supersession chain" in chromium.find_element(By.TAG_NAME, "main").text

        for path, words in (
            ("explain?q=how+do+we+run+the+tests", "Answered"),
            ("code", "src/"),
            ("code/file?path=src/retry.py", "backoff_delay"),
            ("review", "Turns worth keeping"),
            ("sessions/sess-1", "Where do deploys go now?"),
            ("sessions", "sess-1"),
            ("memories?collection=facts&superseded=only", ids["deploy"]),
            ("turns", "where do deploys go?"),
            ("offloads", "No offload yet."),
            ("memory/fact-000000000000", "No memory has the id"),
        ):
            chromium.get(served.base + path)
            assert words in chromium.find_element(By.TAG_NAME, "main").text, path
            assert _drawn(chromium), path


@pytest.mark.slow
def test_another_server_on_127_0_0_1_is_never_sent_the_token(project, chromium):
    """Cookies are not isolated by port: the token's cookie, once set with ``Path=/``, went to every
    server on 127.0.0.1 the user opened.  Bound to this run's secret path, it goes to none."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: list[str] = []

    class Other(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Cookie") or "")
            body = b"<!doctype html><title>other</title>another local server"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    other = ThreadingHTTPServer(("127.0.0.1", 0), Other)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        saved_memories(project)
        with served_browser(project) as served:
            chromium.get(served.url)
            assert chromium.title.startswith("Dashboard")
            for path in ("/", "/memories", "/static/ui.css"):
                chromium.get(f"http://127.0.0.1:{other.server_address[1]}{path}")
            assert len(seen) >= 3 and not any(served.token in cookie for cookie in seen), seen
    finally:
        other.shutdown()
