"""Team memory in git: `export` writes facts and episodes as deterministic JSON Lines, `import` merges
them into another checkout (real scripts, real LanceDB, the real model)."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.support.scripts import run_script
from tests.support.team_git import COMPARED

CONTENT = tuple(k for k in COMPARED if not k.endswith("_at"))  # times differ between the clones

EPISODE = (
    "save_fact",
    "--type",
    "episode",
    "--goal",
    "Run tests in parallel",
    "--result",
    "failure",
    "--category",
    "test",
    "pytest -n auto deadlocked on the shared DB fixture.",
)


def _memories(cwd) -> list[dict]:
    out = run_script("memory", "list", "--limit", "1000", cwd=cwd)
    assert out.returncode == 0, out.stdout
    rows = [{k: r.get(k) for k in CONTENT} for r in out.json["records"] if r["collection"] != "logs"]
    return sorted(rows, key=lambda r: r["id"])


@pytest.mark.slow
def test_export_then_import_reproduces_memory_and_a_second_import_changes_nothing(tmp_path):
    a, b = tmp_path / "alice", tmp_path / "bob"
    a.mkdir()
    b.mkdir()
    old = run_script("save_fact", "Deploy with heroku.", "--kind", "decision", "--topics", "deploy", cwd=a).json
    new = run_script("save_fact", "Deploy with fly deploy.", "--kind", "decision", "--supersedes", old["id"], cwd=a)
    assert new.returncode == 0, new.stdout
    run_script("save_fact", "The CI token is ghp_abcdefghijklmnopqrstuvwxyz0123456789 for now.", cwd=a)
    run_script(*EPISODE, cwd=a)
    run_script("save_fact", "--type", "log", "--session", "s-1", "--role", "user", "Hello there.", cwd=a)

    exported = run_script("export", cwd=a)
    assert exported.returncode == 0, exported.stdout
    assert exported.json["path"] == ".contextware/memory.jsonl" and exported.json["counts"] == {
        "facts": 3,
        "episodes": 1,
    }
    file = a / ".contextware" / "memory.jsonl"
    lines = file.read_text().splitlines()
    assert json.loads(lines[0]) == {"format": "contextware-memory", "version": 2}
    rows = [json.loads(line) for line in lines[1:]]
    order = [(r["created_at"], r["id"]) for r in rows]  # new lines go at the end (docs/memory-file.md)
    assert order == sorted(order) and len(rows) == 4
    assert all("vector" not in r and not r["id"].startswith("log-") for r in rows)
    assert all(r["created_at"].endswith("Z") for r in rows)
    assert "ghp_" not in file.read_text()  # secrets were redacted on save and stay redacted
    # Deterministic: the same memory gives the same bytes, reported as unchanged.
    before = file.read_bytes()
    again = run_script("export", cwd=a)
    assert again.json["changed"] is False and file.read_bytes() == before
    piped = run_script("export", "--output", "-", cwd=a)
    assert piped.returncode == 0 and piped.stdout.encode() == before
    with_logs = run_script("export", "--include-logs", "-o", str(tmp_path / "all.jsonl"), cwd=a)
    assert with_logs.json["counts"]["logs"] == 1

    # Bob pulls the file into his (empty) checkout and imports it.
    (b / ".contextware").mkdir()
    shutil.copy(file, b / ".contextware" / "memory.jsonl")
    first = run_script("import", cwd=b)
    assert first.returncode == 0, first.stdout
    assert (first.json["added"], first.json["updated"], first.json["unchanged"]) == (4, 0, 0)
    assert _memories(b) == _memories(a)
    found = run_script("recall", "how do we deploy?", cwd=b)  # vectors were computed on import
    assert found.json["results"][0]["id"] == new.json["id"]
    second = run_script("import", cwd=b)
    assert (second.json["added"], second.json["updated"], second.json["unchanged"]) == (0, 0, 4)
    assert _memories(b) == _memories(a)
    assert run_script("export", cwd=b).json["changed"] is False  # Bob's export is Alice's file, byte for byte
    assert (b / ".contextware" / "memory.jsonl").read_bytes() == before

    # Alice fixes a fact; Bob's next import takes the newer copy and only that.
    fixed = run_script("memory", "update", new.json["id"], "--text", "Deploy with `fly deploy --remote-only`.", cwd=a)
    assert fixed.returncode == 0, fixed.stdout
    run_script("export", "-o", str(b / ".contextware" / "memory.jsonl"), cwd=a)
    third = run_script("import", "--format", "text", cwd=b)
    assert third.returncode == 0 and "0 added, 1 updated, 3 unchanged" in third.stdout
    assert _memories(b) == _memories(a)

    # Carol saved the same episode herself: it has the same id (ids come from the content), so
    # Alice's copy is not added twice; Carol's, saved later, is kept.
    c = tmp_path / "carol"
    c.mkdir()
    carols = run_script(*EPISODE, cwd=c).json["id"]
    dup = run_script("import", str(file), cwd=c)
    assert (dup.json["added"], dup.json["unchanged"]) == (3, 1), dup.json
    assert [r["id"] for r in _memories(c) if r["collection"] == "episodes"] == [carols]
    assert carols in file.read_text()


def test_a_bad_line_exits_2_naming_it_and_writes_nothing(project_dir):
    good = {"id": "fact-0123456789ab", "kind": "note", "text": "We use uv.", "created_at": "2026-01-01T00:00:00Z"}
    path = project_dir / "memory.jsonl"
    path.write_text(json.dumps(good) + "\n{oops\n")
    out = run_script("import", str(path), cwd=project_dir)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.json["error"]["code"] == "bad_import" and out.json["error"]["message"].startswith("Line 2 ")
    missing = run_script("import", cwd=project_dir)
    assert missing.returncode == 2 and missing.json["error"]["code"] == "file_not_found"
    assert not (project_dir / "contextware_data").exists()  # nothing was written
