"""No secret in a name that is stored (issue 23, item 7), run as real subprocesses of our scripts: a
log's session id is redacted (rows of one session stay together); a store namespace or key, or an
episode category, that holds a secret is refused (exit 2), since a mask would change what it names;
export carries no secret session id.  A secret said in words is masked in a saved fact."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support import secret_corpus as sc
from tests.support.scripts import run_script

SLACK_SHORT = "xoxb-" + "2048193-4096283-zq8xk2"  # fits a lowercase 40-character slug


def test_names_never_store_a_secret(project_dir: Path):
    sid = f"run-{sc.GITHUB}"
    for text in ("first part of the turn", "second part of the turn"):
        out = run_script("save_fact", text, "--type", "log", "--session", sid, "--role", "user", cwd=project_dir)
        assert out.returncode == 0, out.stdout
        assert out.json["redacted"] == {"github_token": 1}
    said = run_script("save_fact", sc.INLINE["said_password"], cwd=project_dir)
    assert said.returncode == 0 and said.json["redacted"] == {"said_secret": 1}

    refused = [
        ("store", "save", "--namespace", f"ns-{sc.NPM}", "--key", "k", "--data", "1"),
        ("store", "save", "--namespace", "ns", "--key", f"creds {sc.INLINE['said_token']}", "--data", "1"),
        ("store", "save", "--namespace", "ns", "--key", sc.DIGITALOCEAN, "--data", "1"),
        ("store", "load", "--namespace", "ns", "--key", sc.GOOGLE),
        (
            "save_fact",
            "Rotated the bot token.",
            "--type",
            "episode",
            "--goal",
            "rotate",
            "--result",
            "success",
            "--category",
            SLACK_SHORT,
        ),
    ]
    for args in refused:
        res = run_script(*args, cwd=project_dir)
        assert res.returncode == 2, (args, res.stdout)
        error = res.json["error"]
        assert error["code"] == "secret_in_name" and "looks like a secret" in error["message"], error
        assert sc.leaks(res.stdout + res.stderr) == [] and SLACK_SHORT not in res.stdout, error

    logs = run_script("memory", "list", "--collection", "logs", cwd=project_dir)
    sessions = {r["session_id"] for r in logs.json["records"]}
    assert sessions == {"run-[REDACTED:github_token]"}, sessions  # one session, still grouped
    exported = run_script("export", "--include-logs", "--output", "-", cwd=project_dir)
    assert exported.returncode == 0, exported.stdout[-500:]
    from tests.support.secret_corpus import table_dump

    dump = table_dump(project_dir)
    for text in (dump, exported.stdout, json.dumps(run_script("store", "list", cwd=project_dir).json)):
        assert sc.leaks(text) == [] and SLACK_SHORT not in text
    kv_log = project_dir / "contextware_data" / "kv-access.log"
    assert not kv_log.exists() or sc.leaks(kv_log.read_text()) == []


def test_import_redacts_session_ids_and_refuses_a_secret_category(project_dir: Path):
    log = {
        "id": "log-0123456789ab",
        "session_id": f"s-{sc.GITHUB}",
        "role": "user",
        "text": "hello there",
        "created_at": "2026-01-01T00:00:00Z",
    }
    out = run_script("import", "-", cwd=project_dir, input=json.dumps(log) + "\n")
    assert out.returncode == 0, out.stdout
    rows = run_script("memory", "list", "--collection", "logs", cwd=project_dir).json["records"]
    assert [r["session_id"] for r in rows] == ["s-[REDACTED:github_token]"]
    episode = {
        "id": "episode-0123456789ab",
        "goal": "g",
        "result": "success",
        "summary": "s",
        "category": SLACK_SHORT,
        "created_at": "2026-01-01T00:00:00Z",
    }
    bad = run_script("import", "-", cwd=project_dir, input=json.dumps(episode) + "\n")
    assert bad.returncode == 2 and bad.json["error"]["code"] == "bad_import", bad.stdout
    assert SLACK_SHORT not in bad.stdout
