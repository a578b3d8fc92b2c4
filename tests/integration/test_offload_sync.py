"""The offload files are the source of truth, the table an index: ``sync.py check|rebuild|prune``,
an index that cannot be opened, concurrent offloads of one key, the recall filters and ``--global``.

These tests are about our files, index and locks, not the CLI, so they use a tiny fake ``gemini``
executable (tests/support/offload_helpers.py) instead of the real CLI (~2 s a run).
"""

from __future__ import annotations

import glob
import json
import shutil
import subprocess
import sys
from pathlib import Path

from contextware.offload.run import offload, sessions_command
from contextware.offload.sync import sync
from contextware.offload.table import offload_where
from contextware.storage.project import registered_projects
from tests.support.offload_helpers import table_rows
from tests.support.repo import SCRIPTS
from tests.support.scripts import run_script


def _populate(project) -> dict:
    a = offload(project, "What does app do?", files="src/app.py", topic="app")
    b = offload(project, "Explain the design.", include_dirs="docs")
    s1 = offload(project, "First question on routing.", session="routing")
    s2 = offload(project, "Second question on routing.", session="routing", files="src/util.py")
    return {"a": a, "b": b, "s1": s1, "s2": s2}


def _ids(items: list[dict]) -> list[str]:
    return [i["id"] for i in items]


def test_sync_check_rebuild_prune(fake_gemini, make_project, monkeypatch):
    project = make_project()
    out = _populate(project)
    assert len(table_rows(project)) == 5  # 2 cached answers, 2 turns, 1 synthesis
    report = sync(project, "check")
    assert report["in_sync"] is True and report["files"] == report["rows"] == 5 and report["stale"] == []

    # missing row: the index lost one
    table = project.db.open_table("offloads")
    table.delete(f"id = '{out['a']['id']}'")
    report = sync(project, "check")
    assert report["in_sync"] is False and _ids(report["missing"]) == [out["a"]["id"]]
    assert report["missing"][0]["file"] == out["a"]["full_response_path"]

    # changed entry: someone edited a summary on disk
    summary_md = project.root / out["b"]["full_response_path"].replace("full_response.md", "summary.md")
    summary_md.write_text("Edited by hand.")
    report = sync(project, "check")
    assert _ids(report["changed"]) == [out["b"]["id"]] and report["changed"][0]["fields"] == ["summary"]

    rebuilt = sync(project, "rebuild")
    assert rebuilt["indexed"] == 5
    assert sync(project, "check")["in_sync"] is True
    assert {r["id"]: r["summary"] for r in table_rows(project)}[out["b"]["id"]] == "Edited by hand."

    # orphan rows: a cache entry and a whole session were deleted by hand
    shutil.rmtree((project.root / out["a"]["full_response_path"]).parent)
    shutil.rmtree(project.data_dir / "offloads" / "sessions" / "routing")
    report = sync(project, "check")
    assert report["counts"]["orphans"] == 4 and out["a"]["id"] in _ids(report["orphans"])
    assert "prune" in report["hint"]
    pruned = sync(project, "prune")
    assert pruned["pruned"] == 4 and pruned["rows"] == 1
    assert sync(project, "check")["in_sync"] is True and [r["id"] for r in table_rows(project)] == [out["b"]["id"]]

    # stale: a source under an included folder changed (the index still matches the files)
    (project.root / "docs" / "design.md").write_text("# Design v2\n")
    report = sync(project, "check")
    assert report["in_sync"] is True and [s["reason"] for s in report["stale"]] == ["docs/design.md changed"]

    # damaged entry, and the script's envelope
    broken = project.data_dir / "offloads" / "cache" / "0123456789abcdef"
    broken.mkdir()
    (broken / "metadata.json").write_text("{}")
    res = run_script("sync", "check", cwd=project.root)
    assert res.returncode == 0 and res.json["ok"] is True and res.json["action"] == "check"
    assert res.json["incomplete"][0]["path"].endswith("0123456789abcdef") and res.json["in_sync"] is False
    bad = run_script("sync", "rebuild-all", cwd=project.root)
    assert bad.returncode == 2 and bad.json["error"]["code"] == "usage"


def test_index_that_cannot_be_opened_does_not_stop_offloads(fake_gemini, make_project):
    project = make_project()
    first = offload(project, "What does app do?", files="src/app.py")
    assert first["indexed"] is True
    for manifest in glob.glob(str(project.data_dir / "lancedb" / "offloads.lance" / "_versions" / "*")):
        Path(manifest).write_bytes(b"garbage")

    res = run_script("offload", "--prompt", "What does util do?", "--files", "src/util.py", cwd=project.root, input="")
    assert res.returncode == 0, res.stdout + res.stderr[-1000:]
    doc = res.json
    assert doc["ok"] is True and doc["cached"] is False and doc["indexed"] is False
    assert "sync.py rebuild" in doc["index_error"]
    assert (project.root / doc["full_response_path"]).read_text().startswith("Answer to: What does util do?")

    res = run_script("sync", "check", cwd=project.root)
    assert res.json["ok"] is True and res.json["in_sync"] is False and res.json["index_error"]
    res = run_script("sync", "rebuild", cwd=project.root)
    assert res.returncode == 0, res.stdout
    assert res.json["indexed"] == 2 and res.json["moved_damaged_table_to"].startswith("contextware_data/damaged/")
    res = run_script("sync", "check", cwd=project.root)
    assert res.json["in_sync"] is True and res.json["rows"] == 2


def test_concurrent_offloads_of_one_key_ask_gemini_once(fake_gemini, make_project, monkeypatch):
    project = make_project()
    monkeypatch.setenv("FAKE_GEMINI_DELAY", "1.5")
    cmd = [sys.executable, str(SCRIPTS / "offload.py"), "--prompt", "Same question", "--files", "src/app.py"]
    procs = [
        subprocess.Popen(
            cmd, cwd=project.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True
        )
        for _ in range(2)
    ]
    docs = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert all(d["ok"] for d in docs), docs
    assert sorted(d["cached"] for d in docs) == [False, True]
    assert len(fake_gemini.calls()) == 1
    assert docs[0]["full_response_path"] == docs[1]["full_response_path"]
    entries = [p.name for p in (project.data_dir / "offloads" / "cache").iterdir()]
    assert len(entries) == 1 and not entries[0].startswith(".")
    assert len(table_rows(project)) == 1


def test_session_state_survives_a_crash_mid_call(fake_gemini, make_project, monkeypatch):
    """The Gemini session id is on disk before the call: after a crash while the CLI had already
    created the session (it now exits 42 "already exists"), the next turn resumes it; a turn file
    written just before a crash, but never recorded in session.json, is still a turn."""
    project = make_project()
    offload(project, "First question on routing.", session="routing")
    state_path = project.data_dir / "offloads" / "sessions" / "routing" / "session.json"
    state = json.loads(state_path.read_text())
    state.update(gemini_session_id="cw_routing_feedbeef", gemini_started=False)  # as saved before the crash
    state_path.write_text(json.dumps(state))
    monkeypatch.setenv("FAKE_GEMINI_EXISTING", "cw_routing_feedbeef")
    out = offload(project, "Second question on routing.", session="routing")
    argvs = [c["argv"] for c in fake_gemini.calls()[-2:]]
    assert argvs[0][argvs[0].index("--session-id") + 1] == "cw_routing_feedbeef"
    assert argvs[1][argvs[1].index("--resume") + 1] == "cw_routing_feedbeef"
    assert out["turn"] == 2 and out["gemini_session_id"] == "cw_routing_feedbeef"

    orphan = project.data_dir / "offloads" / "sessions" / "routing" / "full_response-20990101T000000.000000Z.md"
    orphan.write_text("An answer written just before a crash.")
    shown = sessions_command(project, "show", "routing")["session"]
    assert len(shown["turns"]) == 3 and shown["turns"][2]["full_response_path"].endswith(orphan.name)
    assert sync(project, "check")["counts"]["missing"] == 1
    sync(project, "rebuild")
    assert "An answer written just before a crash." in {r["summary"] for r in table_rows(project)}
    out = offload(project, "Third question.", session="routing")
    assert out["turn"] == 4


def test_offload_where_filters(fake_gemini, make_project):
    project = make_project()
    out = _populate(project)
    table = project.db.open_table("offloads")

    def ids(**kw) -> set[str]:
        where = offload_where(**{"source": None, "session": None, **kw})
        return {r["id"] for r in table.search().where(where).select(["id"]).limit(None).to_list()}

    assert offload_where(source=None, session=None) is None
    assert ids(source="src/app.py") == {out["a"]["id"]}
    assert ids(source="./src/") == {out["a"]["id"], out["s2"]["id"]} | _synthesis(project)  # files under src
    assert ids(source="docs/design.md") == {out["b"]["id"]}  # a file inside a source folder
    assert ids(source=str(project.root / "docs"), root=project.root) == {out["b"]["id"]}
    assert ids(source="src/app") == set() and ids(source="sr") == set()
    assert ids(session="routing") == {out["s1"]["id"], out["s2"]["id"]} | _synthesis(project)
    assert ids(session="routing", source="src/util.py") == {out["s2"]["id"]} | _synthesis(project)
    assert ids(session="o'brien") == set()  # quoted safely


def _synthesis(project) -> set[str]:
    return {r["id"] for r in table_rows(project) if r["type"] == "synthesis"}


def test_registered_projects_lists_every_project(fake_gemini, make_project):
    one, two = make_project("one"), make_project("two")
    offload(one, "Question in one?")
    offload(two, "Question in two?")
    roots = [p.root for p in registered_projects()]
    assert roots == sorted([one.root, two.root])
    shutil.rmtree(two.root)
    assert [p.root for p in registered_projects()] == [one.root]


# ---------------------------------------------------------------- recall wiring (contextware.memory.recall)
# Assumed signature: ask(project, query, *, scope="offloads"|"all", source=None, session=None,
# all_projects=False, since=None, topic=None, limit=5, mode="summary") -> {"results": [...]} where an
# offloads result carries collection "offloads", summary, source_paths, session_name,
# full_response_path and, with all_projects, project.
def test_recall_scope_offloads_with_filters(fake_gemini, make_project, monkeypatch):
    from contextware.memory.recall import ask

    monkeypatch.setenv("FAKE_GEMINI_RESPONSE", "The payment retry policy uses exponential backoff with jitter.")
    project = make_project()
    offload(project, "How do payment retries work?", files="src/app.py", topic="payments")
    offload(project, "Payment retries in the session?", session="payments", files="src/util.py")
    res = ask(project, "payment retry backoff", scope="offloads")
    hits = res["results"]
    assert hits and all(h["collection"] == "offloads" for h in hits)
    assert {"summary", "source_paths", "full_response_path"} <= hits[0].keys()
    assert "exponential backoff" in hits[0]["summary"]
    only_app = ask(project, "payment retry backoff", scope="offloads", source="src/app.py")["results"]
    assert [h["source_paths"] for h in only_app] == [["src/app.py"]]
    in_session = ask(project, "payment retry backoff", scope="offloads", session="payments")["results"]
    assert in_session and all(h["session_name"] == "payments" for h in in_session)
    assert ask(project, "payment retry backoff", scope="all", source="src/app.py")["results"]
    assert ask(project, "payment retry backoff", scope="offloads", topic="payments")["results"]
    assert ask(project, "payment retry backoff", scope="offloads", since="1d")["results"]


def test_recall_global_over_two_projects(fake_gemini, make_project, monkeypatch):
    from contextware.memory.recall import ask

    monkeypatch.setenv("FAKE_GEMINI_RESPONSE", "Deployments go through the blue-green pipeline.")
    one, two = make_project("one"), make_project("two")
    offload(one, "How do we deploy service one?")
    offload(two, "How do we deploy service two?")
    res = ask(one, "blue-green deployment pipeline", scope="offloads", all_projects=True, limit=10)
    projects = {h["project"] for h in res["results"]}
    assert projects == {str(one.root), str(two.root)}
    local = ask(one, "blue-green deployment pipeline", scope="offloads", limit=10)
    assert {h.get("project", str(one.root)) for h in local["results"]} == {str(one.root)}
