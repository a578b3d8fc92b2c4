"""``scripts/ui.py`` as a person runs it: the real process prints its URL, listens on 127.0.0.1
only, answers with the token and refuses without, and stops cleanly on SIGTERM and Ctrl-C with
its JSON (which never carries the token)."""

from __future__ import annotations

import json
import os
import signal

import pytest

from tests.support.browser import listening_addresses, request, ui_process


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_ui_serves_one_project_on_loopback_and_stops_cleanly(project_dir, script, stop):
    saved = script("save_fact", "The staging database is Postgres 16 on port 5433.", "--kind", "environment").json
    with ui_process(project_dir) as (proc, url):
        port = int(url.split(":")[2].split("/")[0])
        token = url.split("token=")[1]
        assert listening_addresses(port) == ["0100007F"]
        assert request(port, "/").status == 403
        assert request(port, f"/?token={token}").status == 303
        page = request(port, f"/memory/{saved['id']}", token=token)
        assert page.status == 200 and "Postgres 16" in page.text
        assert request(port, "/", token=token, host=f"attacker.example:{port}").status == 403
        proc.send_signal(stop)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    result = json.loads(out)
    assert result == {"ok": True, "url": f"http://127.0.0.1:{port}/", "served_s": result["served_s"], "stopped": True}
    assert token not in out and "Traceback" not in err


def test_a_bad_port_is_one_sentence(project_dir, script):
    bad = script("ui", "--no-browser", "--port", "70000")
    assert bad.returncode == 2 and bad.json["error"]["message"] == "--port must be between 0 and 65535."


def test_the_first_dashboard_comes_from_a_warm_service_with_the_same_figures(
    project_dir, script, services, monkeypatch
):
    """While the browser's own process still imports LanceDB, a running resident service answers
    the dashboard's figures: the same as the in-process ones."""
    from contextware.browser import views
    from contextware.core.settings import Settings
    from contextware.storage.project import Project
    from tests.support.service_helpers import run

    script("save_fact", "Payments retry three times with `backoff_delay`.", "--kind", "convention")
    script("save_fact", "The staging database is Postgres 16.", "--kind", "environment")
    assert run("service", "start", cwd=project_dir).json["running"] is True
    monkeypatch.setenv("CONTEXTWARE_SERVICE", "auto")
    project = Project.open(project_dir, Settings.from_env(os.environ))
    served = views.served_dashboard(project)
    local = views.dashboard(project)
    assert served is not None and served["from_service"] is True and local["from_service"] is False
    assert served["tables"]["facts"]["rows"] == local["tables"]["facts"]["rows"] == 2
    assert served["code"]["files"] == local["code"]["files"] and served["code"]["stale"] is None
    assert served["stale_memories"] == local["stale_memories"]
    assert served["service"]["running"] is True
    monkeypatch.setenv("CONTEXTWARE_SERVICE", "off")
    assert views.served_dashboard(Project.open(project_dir, Settings.from_env(os.environ))) is None


def test_offloads_and_their_full_answers(fake_gemini, make_project, monkeypatch):
    """Offload answers (run through the fake ``gemini`` executable) are listed, and one shows its
    prompt, summary and full answer, escaped; a search links to it."""
    from contextware.offload.run import offload
    from tests.support.browser import request, served_browser

    monkeypatch.setenv("FAKE_GEMINI_RESPONSE", "Routing goes handler -> route. <b>not bold</b> & done.")
    project = make_project()
    done = offload(project, "How does request routing work?", files="src/app.py", topic="routing")
    rows = project.db.open_table("offloads").search().select(["id"]).limit(None).to_list()
    oid = rows[0]["id"]
    with served_browser(project) as served:
        listed = request(served.port, "/offloads", token=served.token).text
        assert oid in listed and "How does request routing work?" in listed
        one = request(served.port, f"/offloads/{oid}", token=served.token)
        assert one.status == 200 and "&lt;b&gt;not bold&lt;/b&gt; &amp; done." in one.text and "<b>not" not in one.text
        assert "src/app.py" in one.text and done["full_response_path"] in one.text
        missing = request(served.port, "/offloads/offload-nothing", token=served.token)
        assert missing.status == 404 and "No offload has the id" in missing.text
        found = request(served.port, "/explain?q=how+does+request+routing+work&scope=offloads", token=served.token).text
        assert f"/offloads/{oid}" in found


@pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="needs root to act as another local user")
def test_another_local_user_gets_nothing(project_dir, script, tmp_path, monkeypatch):
    """A second user on the machine (``nobody``) can reach the port but not the memory: no token
    is on any command line, the redirect file is not readable, every guess is refused."""
    import pwd
    import subprocess
    import webbrowser

    from contextware.browser.server import open_privately

    try:
        other = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user 'nobody' on this machine")
    script("save_fact", "The release signing key lives in the team vault.", "--kind", "environment")
    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", opened.append)
    with ui_process(project_dir) as (proc, url):
        port, token = int(url.split(":")[2].split("/")[0]), url.split("token=")[1]
        from contextware.browser.server import Served

        open_privately(Served(port, token))
        probe = (
            "import sys, os, urllib.request, urllib.error\n"
            "port, page = int(sys.argv[1]), sys.argv[2]\n"
            "codes = []\n"
            "for path in ('/', '/memories', '/?token=' + 'A' * 43):\n"
            "    try:\n"
            "        codes.append(urllib.request.urlopen(f'http://127.0.0.1:{port}{path}', timeout=10).status)\n"
            "    except urllib.error.HTTPError as e:\n"
            "        codes.append(e.code)\n"
            "try:\n"
            "    open(page).read(); codes.append('read')\n"
            "except PermissionError:\n"
            "    codes.append('denied')\n"
            "lines = []\n"
            "for pid in os.listdir('/proc'):\n"
            "    try:\n"
            "        lines.append(open(f'/proc/{pid}/cmdline', 'rb').read())\n"
            "    except OSError:\n"
            "        pass\n"
            "secret = sys.stdin.read().encode()  # not on a command line of its own\n"
            "print(codes, any(secret in c for c in lines))\n"
        )
        page = opened[0].removeprefix("file://")
        done = subprocess.run(
            ["/usr/bin/python3", "-I", "-c", probe, str(port), page],
            input=token[:20],
            capture_output=True,
            text=True,
            timeout=60,
            user=other.pw_uid,
            group=other.pw_gid,
            extra_groups=[],
            env={"PATH": "/usr/bin:/bin", "HOME": "/"},
            cwd="/",
        )
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[403, 403, 403, 'denied'] False"
