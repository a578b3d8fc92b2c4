"""The scripts end to end, as subprocesses run from inside a project, the way an agent runs them."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from contextware.storage.config import DEFAULTS
from tests.support.repo import REPO
from tests.support.scripts import run_script


def test_save_recall_roundtrip_and_envelope(script, project_dir):
    saved = script(
        "save_fact",
        "Integration tests need the docker compose stack running first.",
        "--kind",
        "constraint",
        "--topics",
        "testing,docker",
    )
    assert saved.returncode == 0, saved.stderr
    body = saved.json
    assert body["ok"] is True and body["collection"] == "facts" and body["id"].startswith("fact-")
    ep = script(
        "save_fact",
        "-",
        "--type",
        "episode",
        "--goal",
        "Fix flaky login test",
        "--result",
        "failure",
        "--category",
        "test",
        input="Retrying did not help; the clock mock leaked between tests.",
    )
    assert ep.returncode == 0, ep.stderr
    found = script("recall", "--query", "what must be running before I start the integration tests?")
    assert found.returncode == 0
    res = found.json
    assert set(res) == {"ok", "query", "answerable", "min_confidence", "results", "degraded"}
    assert (
        res["degraded"] is None
        and res["answerable"] is True
        and res["min_confidence"] == DEFAULTS["recall_min_confidence"]
    )
    top = res["results"][0]
    assert top["id"] == body["id"] and top["collection"] == "facts"
    assert {"collection", "id", "score", "confidence", "text", "kind", "topics"} <= set(top)
    strict = script(
        "recall", "--query", "what must be running before I start the integration tests?", "--min-confidence", "1"
    )
    assert strict.returncode == 0 and strict.json["answerable"] is False and strict.json["results"] == []
    bad = script("recall", "--query", "tests?", "--min-confidence", "1.5")
    assert bad.returncode == 2 and bad.json["error"]["code"] == "bad_min_confidence"
    text = script("recall", "--query", "why was the login test flaky?", "--format", "text")
    assert "[FAILURE] [TEST] Goal: Fix flaky login test | Summary: Retrying did not help" in text.stdout
    assert (project_dir / "contextware_data" / "lancedb").is_dir()


def test_project_root_resolution(tmp_path, script):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    sub = repo / "src" / "pkg"
    sub.mkdir(parents=True)
    out = run_script("save_fact", "Tabs are forbidden in YAML files.", cwd=sub)
    assert out.returncode == 0
    assert (repo / "contextware_data").is_dir() and not (sub / "contextware_data").exists()
    other = tmp_path / "other"
    other.mkdir()
    env_root = run_script(
        "recall", "--query", "YAML indentation rule?", cwd=other, env={"CONTEXTWARE_PROJECT_ROOT": str(repo)}
    )
    assert env_root.json["results"], env_root.stdout
    flag = run_script("recall", "--query", "YAML indentation rule?", "--project-root", str(repo), cwd=other)
    assert flag.json["results"][0]["id"] == env_root.json["results"][0]["id"]


def _rows(project_dir: Path) -> int:
    from contextware.memory import records
    from contextware.storage.project import Project

    return records.list_records(Project.open(project_dir), limit=1000)["total"]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    root = tmp_path_factory.mktemp("seeded")
    env = {"CONTEXTWARE_HOME": str(root / "home")}
    assert run_script("save_fact", "The staging database is reset every night.", cwd=root, env=env).returncode == 0
    return root


BAD_INPUTS = [
    (["save_fact", ""], None, "empty_content"),
    (["save_fact", "   \t\n"], None, "empty_content"),
    (["save_fact", "x" * 4001], None, "too_long"),
    (["save_fact", "ok", "--type", "memo"], None, "bad_type"),
    (["save_fact", "ok", "--kind", "opinion"], None, "bad_kind"),
    (["save_fact", "did it", "--type", "episode", "--goal", "g", "--result", "meh"], None, "bad_result"),
    (["save_fact", "-"], b"\xff\xfe\x00bad", "bad_encoding"),
    (["save_fact", "ok", "--supersedes", "fact-0123456789ab"], None, "not_found"),
    (["save_fact", "ok", "--supersedes", "nonsense"], None, "not_found"),
    (["save_fact"], None, "usage"),
    (["save_fact", "ok", "--bogus"], None, "usage"),
    (["recall", "--query", "x", "--since", "last tuesday"], None, "bad_since"),
    (["recall", "--query", "   "], None, "empty_query"),
    (["recall", "--query", "x", "--limit", "0"], None, "bad_limit"),
    (["recall", "--query", "x", "--scope", "everything"], None, "bad_scope"),
    (["recall", "--query", "x", "--limit", "many"], None, "usage"),
    (["memory", "get", "fact-0123456789ab"], None, "not_found"),
    (["memory", "delete", "fact-0123456789ab"], None, "not_found"),
    (["memory", "update", "fact-0123456789ab", "--text", "new"], None, "not_found"),
    (["memory", "frobnicate"], None, "usage"),
]


@pytest.mark.parametrize("argv, stdin, code", BAD_INPUTS, ids=[" ".join(a)[:40] for a, _, _ in BAD_INPUTS])
def test_bad_input_exit_2_one_sentence_nothing_written(seeded, argv, stdin, code):
    project_dir = seeded
    out = run_script(*argv, input=stdin, cwd=project_dir)
    assert out.returncode == 2, out.stdout + out.stderr
    err = out.json["error"]
    assert out.json["ok"] is False and err["code"] == code
    assert err["message"].endswith(".") and "\n" not in err["message"] and "Traceback" not in out.stdout + out.stderr
    assert _rows(project_dir) == 1


def test_project_root_that_does_not_exist_or_cannot_hold_data(tmp_path, script):
    missing = script("save_fact", "x", "--project-root", str(tmp_path / "nope"))
    assert missing.returncode == 2 and missing.json["error"]["code"] == "bad_project_root"
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "contextware_data").write_text("a file where the data dir should be")
    out = script("save_fact", "x", "--project-root", str(blocked))
    assert out.returncode == 2 and out.json["error"]["code"] == "not_writable"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through file permissions")
def test_read_only_project_root(tmp_path, script):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    out = script("save_fact", "x", "--project-root", str(ro))
    assert out.returncode == 2 and out.json["error"]["code"] == "not_writable"


def test_damaged_data_names_the_recovery_command(script, project_dir):
    assert script("save_fact", "Use pnpm, not npm.").returncode == 0
    versions = project_dir / "contextware_data" / "lancedb" / "facts.lance" / "_versions"
    for manifest in versions.iterdir():
        manifest.write_bytes(b"garbage")
    out = script("recall", "--query", "package manager?")
    assert out.returncode == 1
    err = out.json["error"]
    assert err["code"] == "damaged_data" and "memory.py repair" in err["message"]
    assert "Traceback" not in out.stderr
    fixed = script("memory", "repair")
    assert fixed.returncode == 0, fixed.stdout
    facts = fixed.json["tables"]["facts"]
    assert facts["status"] == "moved" and facts["lost"] is None and fixed.json["lost"] is None
    again = script("save_fact", "Use pnpm, not npm.")
    assert again.returncode == 0 and again.json["written"] == 1


def test_damaged_config_is_named(script, project_dir):
    (project_dir / "contextware_data").mkdir()
    (project_dir / "contextware_data" / "config.json").write_text("{not json")
    out = script("save_fact", "x")
    assert out.returncode == 2 and out.json["error"]["code"] == "damaged_config"
    assert "config.json" in out.json["error"]["message"]


def test_memory_commands_fix_memories(script):
    a = script("save_fact", "CI runs on GitHub Actions with Python 3.11.").json["id"]
    got = script("memory", "get", a).json["record"]
    assert got["text"].startswith("CI runs on GitHub Actions") and got["collection"] == "facts"
    upd = script("memory", "update", a, "--text", "CI runs on GitHub Actions with Python 3.12.")
    assert upd.returncode == 0 and upd.json["updated"] == ["text"]
    listed = script("memory", "list", "--collection", "facts", "--format", "text")
    assert "3.12" in listed.stdout
    stats = script("memory", "stats").json
    assert stats["tables"]["facts"]["rows"] == 1 and stats["model"].startswith("sentence-transformers/all-MiniLM-L6-v2")
    assert script("memory", "compact").returncode == 0
    assert script("memory", "delete", a).json["deleted"] is True
    assert script("memory", "get", a).returncode == 2


def test_debug_prints_a_traceback_on_stderr_only(script, project_dir):
    (project_dir / "contextware_data").mkdir()
    (project_dir / "contextware_data" / "config.json").write_text("[]")
    out = script("save_fact", "x", "--debug")
    assert out.returncode == 2 and "Traceback" in out.stderr  # a config error: exit 2 (issue 23 f)
    json.loads(out.stdout)


def test_console_command_maps_to_the_same_commands(project_dir):
    exe = shutil.which("contextware", path=str(Path(os.sys.executable).parent))
    assert exe, "the contextware console command is installed with the package"
    import subprocess

    out = subprocess.run(
        [exe, "save", "Prefer small pull requests.", "--kind", "preference"],
        cwd=project_dir,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0 and json.loads(out.stdout)["collection"] == "facts"
    bad = subprocess.run([exe, "nope"], cwd=project_dir, capture_output=True, text=True)
    assert bad.returncode == 2 and json.loads(bad.stdout)["error"]["code"] == "usage"


def test_agent_invocation_through_uv_run_from_another_directory(project_dir):
    """The exact form SKILL.md gives: `uv run --project <skill_dir> <skill_dir>/scripts/...` from the
    user's project; the data lands in the user's project, not in the skill."""
    import subprocess

    uv = shutil.which("uv")
    assert uv, "uv is required"
    cmd = [uv, "run", "--project", str(REPO), str(REPO / "scripts" / "save_fact.py"), "Agents must run make lint."]
    out = subprocess.run(cmd, cwd=project_dir, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["ok"] is True
    assert (project_dir / "contextware_data").is_dir()
