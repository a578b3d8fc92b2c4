"""contextware.gemini against the REAL Gemini CLI (0.61.0) talking to tests/support/fake_gemini_api.py.

A fake ``gemini`` executable is used only where the real CLI cannot produce a case quickly (text
before the JSON, exit-code and parsing edge cases, counting retries, and the cross-process rate
limiter, where the point is the limiter and not the CLI).  Each real CLI start
costs ~1.5-2 s on 2 cores, so the real-CLI tests are few and each checks several things.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from contextware.errors import GeminiError, UsageError
from contextware.gemini.availability import gemini_available
from contextware.gemini.headless import run_gemini
from contextware.gemini.sessions import GeminiSession, delete_session, list_sessions
from contextware.system import KILL_GRACE_SECONDS
from tests.support.fake_gemini_api import FakeGeminiAPI, Reply
from tests.support.gemini_fixtures import update_gemini_settings

REPO_ROOT = Path(__file__).resolve().parents[2]
MODEL = "gemini-2.5-flash"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    (path / "main.py").write_text("print('hello')\n")
    return path


@pytest.fixture
def run(gemini_bin: str, gemini_cli_env: dict[str, str], project: Path):
    """run_gemini with the real CLI, the fake API's environment and the project as cwd."""

    def _run(prompt: str = "Summarise.", **kwargs):
        kwargs.setdefault("binary", gemini_bin)
        kwargs.setdefault("cwd", project)
        kwargs.setdefault("timeout", 60)
        env = dict(gemini_cli_env)
        env.update(kwargs.pop("env_update", {}))
        for name in kwargs.pop("env_drop", ()):
            env.pop(name, None)
        kwargs.setdefault("extra_env", env)
        return run_gemini(prompt, **kwargs)

    return _run


# ---------------------------------------------------------------- real CLI: success paths
def test_success_sums_tokens_and_sends_stdin(run, fake_gemini_api: FakeGeminiAPI, tmp_path: Path):
    fake_gemini_api.push(
        Reply(
            text=["The file ", "prints hello."],
            prompt_tokens=120,
            candidates_tokens=9,
            cached_tokens=4,
            thoughts_tokens=3,
        )
    )
    extra = tmp_path / "extra_dir"
    extra.mkdir()
    result = run("Summarise this file.", stdin_text="UNIQUE-FILE-CONTENT-123", include_dirs=[str(extra)])

    assert result.response == "The file prints hello."
    assert result.session_id
    # no -m: the router's utility call (fake usage 3/2/5) is a second model, summed in;
    # the CLI reports input = prompt - cached
    assert len(result.models) == 2
    assert result.tokens == {
        "input": 119,
        "prompt": 123,
        "candidates": 11,
        "total": 137,
        "cached": 4,
        "thoughts": 3,
        "tool": 0,
    }
    assert result.prompt_tokens == 123

    chat = fake_gemini_api.chat_requests()
    assert len(chat) == 1
    user_text = "\n".join(chat[0].texts())
    assert "UNIQUE-FILE-CONTENT-123\n\nSummarise this file." in user_text
    assert str(extra) in user_text  # --include-directories reached the workspace context
    assert chat[0].headers.get("x-goog-api-key") == "test-key"
    assert chat[0].query.get("alt") == ["sse"]
    assert fake_gemini_api.utility_requests(), "the router call was expected without -m"


def test_model_flag_sessions_resume_list_and_delete(run, fake_gemini_api, gemini_bin, gemini_cli_env, project):
    fake_gemini_api.push("first answer", "second answer")
    sid = "cw_test1"  # no '-' in the first 8 characters: --delete-session cannot delete those
    first = run("first question", model=MODEL, session_id=sid)
    assert (first.response, first.session_id, first.models) == ("first answer", sid, [MODEL])
    assert fake_gemini_api.chat_requests()[0].model == MODEL

    second = run("second question", model=MODEL, resume=sid)
    assert (second.response, second.session_id) == ("second answer", sid)
    texts = fake_gemini_api.chat_requests()[-1].texts()
    assert "first question" in texts and "second question" in texts
    assert not [r for r in fake_gemini_api.utility_requests() if "model_choice" in json.dumps(r.body)]

    with pytest.raises(GeminiError) as info:
        run("third", model=MODEL, resume="no_such_session")
    assert info.value.code == "unknown_session"
    assert "Invalid session identifier" in info.value.message

    kw = dict(cwd=project, binary=gemini_bin, extra_env=gemini_cli_env)
    sessions = list_sessions(**kw)
    assert [(s.index, s.session_id) for s in sessions] == [(1, sid)]
    assert sessions[0].title and sessions[0].age

    delete_session(sid, **kw)
    assert list_sessions(**kw) == []


# ---------------------------------------------------------------- real CLI: failures
def test_malformed_stream_is_api_error(run, fake_gemini_api):
    fake_gemini_api.push(Reply(raw="data: {not json}\r\n\r\n"))
    with pytest.raises(GeminiError) as info:
        run(model=MODEL)
    assert info.value.code == "api_error"
    assert info.value.details["exit_code"] == 1
    assert "Traceback" not in info.value.message and "\n" not in info.value.message


def test_empty_model_output_is_failure(run, fake_gemini_api, gemini_cli_env):
    """An empty reply ends in exit 0 with an INVALID_STREAM error (the CLI retries it 3 times over
    ~7 s unless general.maxAttempts is 1)."""
    update_gemini_settings(gemini_cli_env, {"general": {"maxAttempts": 1}})
    fake_gemini_api.default_reply = Reply(text="")
    with pytest.raises(GeminiError) as info:
        run(model=MODEL)
    assert info.value.code == "empty_response"
    assert "empty response" in info.value.message


def test_http_400_is_api_error_exit_144(run, fake_gemini_api):
    fake_gemini_api.push(Reply(status=400, error_message="Bad thing happened."))
    with pytest.raises(GeminiError) as info:
        run(model=MODEL)
    err = info.value
    assert err.code == "api_error"
    assert err.details == {"exit_code": 144, "http_status": 400}
    assert "Bad thing happened" in err.message and "HTTP 400" in err.message
    assert "{" not in err.message


def test_http_429_is_rate_limited_and_retried(run, fake_gemini_api, gemini_cli_env):
    """With general.maxAttempts 1 the real CLI exits 173 (429 & 0xFF) at once instead of retrying
    for minutes; run_gemini then backs off and retries a bounded number of times."""
    update_gemini_settings(gemini_cli_env, {"general": {"maxAttempts": 1}})
    fake_gemini_api.push(Reply(status=429, error_message="Quota exceeded."), "after the wait")
    result = run(model=MODEL, rate_limit_retries=2, rate_limit_backoff=0.05)
    assert result.response == "after the wait"
    assert len(fake_gemini_api.chat_requests()) == 2

    fake_gemini_api.default_reply = Reply(status=429, error_message="Quota exceeded.")
    with pytest.raises(GeminiError) as info:
        run(model=MODEL, rate_limit_retries=0)
    err = info.value
    assert err.code == "rate_limited"
    assert err.details == {"exit_code": 173, "http_status": 429}
    assert "Quota exceeded" in err.message


@pytest.mark.parametrize("case", ["no_api_key", "no_settings"])
def test_missing_auth(case, run, gemini_cli_env, tmp_path):
    if case == "no_api_key":
        kwargs = {"env_drop": ["GEMINI_API_KEY"]}
    else:
        home = tmp_path / "bare_home"
        (home / ".gemini").mkdir(parents=True)
        kwargs = {"env_update": {"HOME": str(home), "GEMINI_CLI_HOME": str(home)}}
    with pytest.raises(GeminiError) as info:
        run(model=MODEL, **kwargs)
    assert info.value.code == "auth"
    assert info.value.details["exit_code"] == 41


def test_untrusted_folder(run, fake_gemini_api):
    with pytest.raises(GeminiError) as info:
        run(model=MODEL, trust_workspace=False)
    assert info.value.code == "untrusted_folder"
    assert "untrusted folder" in info.value.message and "--skip-trust" in info.value.message
    assert fake_gemini_api.requests == []


def test_timeout_kills_process_group(run, fake_gemini_api):
    """With the real launcher (it ignores SIGTERM and waits for its node child)."""
    fake_gemini_api.default_reply = Reply(delay=60)
    start = time.monotonic()
    with pytest.raises(GeminiError) as info:
        run(model=MODEL, timeout=4, env_drop=["GEMINI_CLI_NO_RELAUNCH"])
    elapsed = time.monotonic() - start
    assert info.value.code == "timeout"
    assert elapsed < 4 + KILL_GRACE_SECONDS + 2
    with pytest.raises(ProcessLookupError):
        os.killpg(info.value.details["pid"], 0)  # nothing of the group is left


# ---------------------------------------------------------------- fake executable
FAKE_GEMINI = """\
#!{python}
import json, os, sys, time
log = os.environ["FAKE_GEMINI_LOG"]
stdin = sys.stdin.read()
with open(log, "a") as f:
    f.write(json.dumps({{"t": time.time(), "argv": sys.argv[1:], "stdin": stdin}}) + "\\n")
with open(log) as f:
    n = len(f.read().splitlines())
steps = json.loads(os.environ.get("FAKE_GEMINI_STEPS", "[]")) or [{{}}]
step = steps[min(n, len(steps)) - 1]
ok = {{"session_id": "s1", "response": "ok", "stats": {{"models": {{}}}}}}
sys.stdout.write(step.get("stdout", json.dumps(ok)))
sys.stderr.write(step.get("stderr", "Ripgrep is not available. Falling back to GrepTool.\\n"))
sys.exit(step.get("exit", 0))
"""


@pytest.fixture
def fake_bin(tmp_path: Path):
    path = tmp_path / "bin" / "gemini"
    path.parent.mkdir()
    path.write_text(FAKE_GEMINI.format(python=sys.executable))
    path.chmod(0o755)
    log = tmp_path / "fake_gemini.log"

    def _run(*steps: dict, fn=run_gemini, args=("hi",), **kwargs):
        env = {"FAKE_GEMINI_LOG": str(log), "FAKE_GEMINI_STEPS": json.dumps(list(steps))}
        result = fn(*args, binary=str(path), extra_env=env, cwd=tmp_path, **kwargs)
        return result

    _run.path = path
    _run.log = log
    _run.calls = lambda: [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    return _run


def _err_json(code: int, message: str) -> str:
    error = {"type": "Error", "message": message, "code": code}
    return json.dumps({"session_id": "x", "error": error}, indent=2)


def test_text_before_json_and_arguments(fake_bin):
    doc = {
        "session_id": "abc",
        "response": "fine {not json}",
        "stats": {"models": {"a": {"tokens": {"prompt": 5, "total": 7}}, "b": {"tokens": {"prompt": 1}}}},
    }
    result = fake_bin(
        {"stdout": "Loaded cached credentials.\n{oops\n" + json.dumps(doc, indent=2)},
        stdin_text="CONTENT",
        model="m1",
        include_dirs=["a", "b"],
    )
    assert (result.response, result.session_id, result.models) == ("fine {not json}", "abc", ["a", "b"])
    assert result.tokens["prompt"] == 6 and result.tokens["total"] == 7 and result.tokens["tool"] == 0
    call = fake_bin.calls()[0]
    assert call["stdin"] == "CONTENT"
    argv = call["argv"]
    assert argv[:3] == ["-o", "json", "--skip-trust"] and argv[-1:] == ["--prompt=hi"]
    assert argv[argv.index("-m") + 1] == "m1"
    assert argv[argv.index("--include-directories") + 1] == "a,b"


def test_rate_limited_retries_are_bounded(fake_bin):
    """Exit 173 with the stderr error JSON twice after other text; counting the retries needs a
    fake executable (the real-CLI 429 case is test_http_429_is_rate_limited_and_retried)."""
    stderr = "Warning: noise\n" + _err_json(
        429, json.dumps({"error": {"code": 429, "message": "Quota exceeded.", "status": "RESOURCE_EXHAUSTED"}})
    )
    step = {"stdout": "", "stderr": stderr + "\n" + stderr, "exit": 173}
    with pytest.raises(GeminiError) as info:
        fake_bin(step, rate_limit_retries=2, rate_limit_backoff=0.05)
    assert info.value.code == "rate_limited"
    assert info.value.details["http_status"] == 429
    assert "Quota exceeded" in info.value.message
    assert len(fake_bin.calls()) == 3
    # a later success ends the retries
    fake_bin.log.unlink()
    result = fake_bin(step, {}, rate_limit_retries=2, rate_limit_backoff=0.05)
    assert result.response == "ok"


@pytest.mark.parametrize(
    "step, code",
    [
        ({"stdout": ""}, "interrupted"),
        ({"stdout": "no json here"}, "invalid_response"),
        (
            {
                "stdout": json.dumps(
                    {
                        "session_id": "s",
                        "response": "half",
                        "error": {"type": "INVALID_STREAM", "message": "Stream broke."},
                    }
                )
            },
            "invalid_response",
        ),
        ({"stdout": json.dumps({"session_id": "s", "response": "  "})}, "empty_response"),
        (
            {"stdout": "", "stderr": 'Error starting session: Session ID "x" already exists.', "exit": 42},
            "session_exists",
        ),
        ({"stdout": "", "stderr": _err_json(503, "Service unavailable."), "exit": 247}, "api_error"),
        ({"stdout": "", "stderr": _err_json(52, "Bad settings file."), "exit": 52}, "config"),
        ({"stdout": "", "stderr": "something broke\n", "exit": 1}, "gemini_failed"),
        ({"stdout": "", "exit": 137}, "interrupted"),
    ],
)
def test_failure_mapping(fake_bin, step, code):
    with pytest.raises(GeminiError) as info:
        fake_bin(step, rate_limit_retries=0)
    assert info.value.code == code
    msg = info.value.message
    assert msg.endswith(".") and "\n" not in msg and "Traceback" not in msg
    if code == "api_error":
        assert info.value.details["http_status"] == 503


def test_binary_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("CONTEXTWARE_GEMINI_BIN", str(tmp_path / "missing" / "gemini"))
    assert gemini_available() is False
    with pytest.raises(GeminiError) as info:
        run_gemini("hi")
    assert info.value.code == "gemini_not_installed"
    with pytest.raises(UsageError):
        run_gemini("hi", binary=sys.executable, session_id="a", resume="b")


def test_list_sessions_parsing(fake_bin):
    out = (
        "\nAvailable sessions for this project (2):\n"
        "  1. Fix the (tricky) parser (2 hours ago) [cw_abc-1]\n"
        "  2. Second [x] (Just now) [123e4567-e89b-12d3-a456-426614174000]\n"
    )
    sessions = fake_bin({"stdout": out}, fn=list_sessions, args=())
    assert sessions == [
        GeminiSession(1, "Fix the (tricky) parser", "2 hours ago", "cw_abc-1"),
        GeminiSession(2, "Second [x]", "Just now", "123e4567-e89b-12d3-a456-426614174000"),
    ]
    with pytest.raises(GeminiError) as info:
        fake_bin({"stdout": "", "stderr": 'Invalid session identifier "9".'}, fn=delete_session, args=(9,))
    assert info.value.code == "unknown_session"


def test_rate_limiter_across_two_processes(fake_bin, tmp_path):
    window, limit, per_proc = 1.5, 3, 3
    script = textwrap.dedent(f"""
        import sys
        from contextware.gemini import headless, process
        process.RATE_WINDOW_SECONDS = {window}
        for _ in range({per_proc}):
            headless.run_gemini("hi", binary={str(fake_bin.path)!r}, state_dir=sys.argv[1],
                              rate_limit_per_minute={limit}, extra_env={{"FAKE_GEMINI_LOG": sys.argv[2]}})
    """)
    state, log = tmp_path / "state", tmp_path / "limit.log"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    start = time.monotonic()
    cmd = [sys.executable, "-c", script, str(state), str(log)]
    procs = [subprocess.Popen(cmd, env=env) for _ in range(2)]
    assert [p.wait(timeout=30) for p in procs] == [0, 0]
    elapsed = time.monotonic() - start
    starts = sorted(json.loads(x)["t"] for x in log.read_text().splitlines())
    assert len(starts) == 2 * per_proc
    assert elapsed >= window
    for i in range(len(starts) - limit):
        assert starts[i + limit] - starts[i] >= window - 0.25, starts
