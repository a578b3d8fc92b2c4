"""Issue 15 and 14 against the REAL Gemini CLI (fake API): over a multi-turn session with the
project hooks installed, nothing Contextware injected is stored back as a log, every stored log holds
the user's words or the answer as the user saw it, and no planted secret reaches any request the
CLI sends."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from contextware.codeindex.indexer import crawl
from contextware.core.fence import has_injected
from contextware.memory import records
from contextware.storage.project import Project
from tests.support import secret_corpus as sc
from tests.support.fake_gemini_api import Reply
from tests.support.gemini_fixtures import gemini_turn
from tests.support.scripts import run_script

pytestmark = pytest.mark.slow

PY = ("--python", sys.executable)
FACT = "Constraint: releases are cut from the main branch only, never from feature branches."
TURNS = [
    ("Remember that releases are cut from main. Reply with one word.", ["Not", "ed."]),
    ("Which branch do we cut releases from?", ["Releases are cut ", "from main, as you said."]),
    ("And can I cut one from feature/login?", ["No: the release constraint says main only."]),
]


def _install(root: Path, env: dict) -> None:
    out = run_script("install", "gemini", "--project", *PY, cwd=root, env=env)
    assert out.returncode == 0, out.stdout
    trusted = Path(env["GEMINI_CLI_HOME"]) / ".gemini" / "trustedFolders.json"
    trusted.write_text(json.dumps({str(root): "TRUST_FOLDER"}))


def test_a_multi_turn_session_stores_no_injected_block_and_the_answers_as_seen(
    gemini_bin, fake_gemini_api, gemini_cli_env, project: Project
):
    root = project.root
    (root / ".git").mkdir()
    records.save_fact(project, FACT, kind="constraint", topics=["release"])
    _install(root, gemini_cli_env)
    answers = []
    for i, (prompt, reply) in enumerate(TURNS):
        fake_gemini_api.push(Reply(text=reply))
        proc = gemini_turn(gemini_bin, root, gemini_cli_env, prompt, resume=i > 0)
        answers.append(json.loads(proc.stdout)["response"])
    assert answers[0] == "Noted."
    # The memory was injected (the hooks ran) ...
    sent = "\n".join(fake_gemini_api.chat_requests()[-1].texts())
    assert "contextware-memory" in sent and "releases are cut from the main branch" in sent
    # ... and none of it came back as a log: each log is the user's words or the answer as shown.
    logs = records.list_records(Project.open(root), "logs", limit=100)["records"]
    by_role = {role: sorted(r["text"] for r in logs if r["role"] == role) for role in ("user", "agent")}
    assert by_role["user"] == sorted(p for p, _ in TURNS), logs
    assert by_role["agent"] == sorted(answers), logs
    assert not any(has_injected(r["text"]) or "hook_context" in r["text"] for r in logs)


def test_no_planted_secret_reaches_a_table_or_any_request_the_cli_sends(
    gemini_bin, fake_gemini_api, gemini_cli_env, project: Project
):
    root = project.root
    (root / ".git").mkdir()
    sc.plant(root)
    crawl(project, summarizer="local")
    for text in sc.INLINE.values():
        records.save_fact(project, f"Environment note: {text}", kind="environment", topics=["deploy"])
    records.save_episode(
        project, f"Deployed with {sc.INLINE['db_password']}", goal=f"deploy {sc.INLINE['github']}", result="success"
    )
    _install(root, gemini_cli_env)
    prompt = "How do we deploy, which keys and passwords does the deploy use, and where are the settings?"
    fake_gemini_api.push(Reply(text=["The deploy reads its keys from the environment."]))
    gemini_turn(gemini_bin, root, gemini_cli_env, prompt)
    fake_gemini_api.push(Reply(text=["They live in app/settings.py."]))
    gemini_turn(gemini_bin, root, gemini_cli_env, "Show me the settings file and the AWS keys.", resume=True)
    bodies = [json.dumps(r.body) for r in fake_gemini_api.requests]
    assert any("contextware-memory" in b for b in bodies)  # memory was injected into the requests
    assert [sc.leaks(b) for b in bodies] == [[] for _ in bodies]
    assert sc.leaks(sc.table_dump(project.root)) == []
