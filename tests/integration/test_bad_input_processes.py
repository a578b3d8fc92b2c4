"""Forty-odd kinds of bad input, each run as a real subprocess of our scripts: every one is a clear
error (one JSON document, exit 2, one sentence, no traceback) and leaves the data dir exactly as it
was.  Runtime faults that are not the user's input (a file-size limit reached, a damaged table) are
exit 1 with their own codes, ``disk_full`` and ``damaged_data``."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.repo import SCRIPTS

BAD = b"bad \xff\xfe text"  # bytes that are not UTF-8: Python makes lone surrogates of them


def _run(root: Path, script: str, *args: str | bytes, stdin: Any = None, env: dict | None = None, preexec=None):
    full_env = {**os.environ, "PATH": "/usr/bin:/bin", **(env or {})}  # no Gemini CLI on the PATH
    kwargs: dict[str, Any] = {"input": stdin} if isinstance(stdin, bytes) else {"stdin": stdin or subprocess.DEVNULL}
    return subprocess.run(
        [sys.executable, str(SCRIPTS / f"{script}.py"), *args],
        cwd=root,
        env=full_env,
        capture_output=True,
        timeout=120,
        preexec_fn=preexec,
        **kwargs,
    )


def _snapshot(data_dir: Path) -> dict[str, str]:
    out = {}
    for path in sorted(data_dir.rglob("*")):
        if path.is_file():
            out[path.relative_to(data_dir).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A project with a fact and a stored value, made once; each case runs on a fresh copy."""
    root = tmp_path_factory.mktemp("seed") / "proj"
    root.mkdir()
    saved = _run(root, "save_fact", "The API listens on port 8080.")
    assert saved.returncode == 0, saved.stdout
    assert _run(root, "store", "save", "--namespace", "baselines", "--key", "k", "--data", "1").returncode == 0
    (root / "folder").mkdir()
    return {"root": root, "fact": json.loads(saved.stdout)["id"]}


def _zero():
    return open("/dev/zero", "rb")


# (id, script, args, stdin, config.json or None, expected code)
CASES: list[tuple[str, str, tuple, Any, dict | None, str]] = [
    ("fact-not-utf8", "save_fact", (BAD,), None, None, "bad_encoding"),
    ("fact-empty", "save_fact", ("",), None, None, "empty_content"),
    ("fact-blank", "save_fact", ("   \n\t",), None, None, "empty_content"),
    ("fact-nul-stdin", "save_fact", ("-",), b"a\x00b", None, "bad_content"),
    ("fact-stdin-not-utf8", "save_fact", ("-",), b"\xff\xfe\xfa", None, "bad_encoding"),
    ("fact-stdin-dev-zero", "save_fact", ("-",), "zero", None, "too_large"),
    ("fact-too-long", "save_fact", ("word " * 1000,), None, None, "too_long"),
    ("episode-no-goal", "save_fact", ("did it", "--type", "episode"), None, None, "missing_goal"),
    ("episode-no-result", "save_fact", ("did it", "--type", "episode", "--goal", "g"), None, None, "missing_result"),
    (
        "episode-bad-result",
        "save_fact",
        ("x", "--type", "episode", "--goal", "g", "--result", "maybe"),
        None,
        None,
        "bad_result",
    ),
    (
        "episode-goal-not-utf8",
        "save_fact",
        ("x", "--type", "episode", "--goal", BAD, "--result", "success"),
        None,
        None,
        "bad_encoding",
    ),
    ("bad-type", "save_fact", ("x", "--type", "poem"), None, None, "bad_type"),
    ("bad-kind", "save_fact", ("x", "--kind", "opinion"), None, None, "bad_kind"),
    ("bad-topic", "save_fact", ("x", "--topics", "no way!!"), None, None, "bad_topic"),
    ("bad-supersedes", "save_fact", ("x", "--supersedes", "nonsense"), None, None, "not_found"),
    ("log-no-session", "save_fact", ("x", "--type", "log", "--role", "user"), None, None, "missing_session"),
    ("fact-with-session", "save_fact", ("x", "--session", "s1"), None, None, "bad_option"),
    ("empty-project-root", "save_fact", ("x", "--project-root", ""), None, None, "bad_project_root"),
    (
        "missing-project-root",
        "save_fact",
        ("x", "--project-root", "/nonexistent/place"),
        None,
        None,
        "bad_project_root",
    ),
    ("unknown-option", "save_fact", ("x", "--frobnicate"), None, None, "usage"),
    ("query-empty", "recall", ("--query", ""), None, None, "empty_query"),
    ("query-not-utf8", "recall", ("--query", BAD), None, None, "bad_encoding"),
    ("since-overflow", "recall", ("--query", "port", "--since", "99999999d"), None, None, "bad_since"),
    ("since-words", "recall", ("--query", "port", "--since", "last tuesday"), None, None, "bad_since"),
    ("limit-zero", "recall", ("--query", "port", "--limit", "0"), None, None, "bad_limit"),
    ("scope-unknown", "recall", ("--query", "port", "--scope", "everything"), None, None, "bad_scope"),
    ("mode-unknown", "recall", ("--query", "port", "--mode", "fuzzy"), None, None, "bad_mode"),
    ("max-chars-zero", "recall", ("--query", "port", "--max-chars", "0"), None, None, "bad_max_chars"),
    (
        "store-dev-zero",
        "store",
        ("save", "--namespace", "n", "--key", "k", "--data", "@/dev/zero"),
        None,
        None,
        "bad_data",  # a device is refused by its stat, before it is opened
    ),
    (
        "store-stdin-dev-zero",
        "store",
        ("save", "--namespace", "n", "--key", "k", "--data", "-"),
        "zero",
        None,
        "too_large",
    ),
    (
        "store-bad-json",
        "store",
        ("save", "--namespace", "n", "--key", "k", "--data", "{bad json"),
        None,
        None,
        "bad_json",
    ),
    (
        "store-missing-file",
        "store",
        ("save", "--namespace", "n", "--key", "k", "--data", "@/nonexistent.json"),
        None,
        None,
        "file_not_found",
    ),
    ("store-folder", "store", ("save", "--namespace", "n", "--key", "k", "--data", "@folder"), None, None, "bad_data"),
    (
        "store-stdin-not-utf8",
        "store",
        ("save", "--namespace", "n", "--key", "k", "--data", "-"),
        b"\xff\xfe",
        None,
        "bad_encoding",
    ),
    (
        "store-bad-namespace",
        "store",
        ("save", "--namespace", "a/b", "--key", "k", "--data", "1"),
        None,
        None,
        "bad_namespace",
    ),
    ("store-missing-key", "store", ("load", "--namespace", "baselines", "--key", "nope"), None, None, "not_found"),
    ("config-string-number", "save_fact", ("x",), None, {"max_fact_chars": "4000"}, "bad_config"),
    ("config-bool-number", "recall", ("--query", "port"), None, {"recall_candidates": True}, "bad_config"),
    (
        "config-list-number",
        "store",
        ("save", "--namespace", "n", "--key", "k", "--data", "1"),
        None,
        {"store_max_bytes": [1]},
        "bad_config",
    ),
    ("config-unknown-key", "recall", ("port",), None, {"sumarizer": "local"}, "unknown_setting"),
    ("query-twice", "recall", ("port", "--query", "port"), None, None, "usage"),
    ("import-bad-line", "import", ("-",), b'{"id": "fact-0123456789ab"}\n{oops\n', None, "bad_import"),
    ("memory-bad-id", "memory", ("get", "nonsense"), None, None, "not_found"),
    ("memory-limit-zero", "memory", ("list", "--limit", "0"), None, None, "bad_limit"),
    ("memory-update-nothing", "memory", ("update", "FACT"), None, None, "nothing_to_update"),
    ("offload-empty-prompt", "offload", ("--prompt", ""), None, None, "empty_prompt"),
    ("offload-bad-model", "offload", ("--prompt", "x", "--model", "bad model!"), None, None, "bad_model"),
    ("offload-missing-file", "offload", ("--prompt", "x", "--files", "nope.txt"), None, None, "file_not_found"),
    ("offload-prompt-not-utf8", "offload", ("--prompt", BAD), None, None, "bad_encoding"),
    ("crawl-jobs-zero", "crawl_project", ("--jobs", "0"), None, None, "bad_jobs"),
]


def test_there_are_at_least_40_cases():
    assert len(CASES) >= 40 and len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize(("name", "script", "args", "stdin", "config", "code"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_a_clear_error_and_writes_nothing(tmp_path, seeded, name, script, args, stdin, config, code):
    root = tmp_path / "proj"
    shutil.copytree(seeded["root"], root)
    data_dir = root / "contextware_data"
    if config is not None:
        (data_dir / "config.json").write_text(json.dumps(config))
    args = tuple(seeded["fact"] if a == "FACT" else a for a in args)
    before = _snapshot(data_dir)
    zero = _zero() if stdin == "zero" else None
    try:
        out = _run(root, script, *args, stdin=zero or stdin)
    finally:
        if zero:
            zero.close()
    stdout, stderr = out.stdout.decode(), out.stderr.decode(errors="replace")
    lines = stdout.strip().splitlines()
    assert len(lines) == 1, (stdout, stderr[-2000:])
    envelope = json.loads(lines[0])
    assert envelope["ok"] is False and envelope["error"]["code"] == code, envelope
    message = envelope["error"]["message"]
    assert out.returncode == 2, envelope
    assert "\n" not in message and len(message) < 400 and message.rstrip().endswith((".", ")")), message
    assert "Traceback" not in stderr, stderr
    assert _snapshot(data_dir) == before, "bad input changed the data dir"


def _limit_file_size(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.slow
def test_a_file_size_limit_is_disk_full_and_commits_nothing(tmp_path, seeded):
    root = tmp_path / "proj"
    shutil.copytree(seeded["root"], root)
    text = "The deploy pipeline " + " ".join(f"step{i}" for i in range(500))  # a data file over 4 KiB
    before = _snapshot(root / "contextware_data")
    out = _run(root, "save_fact", text, preexec=_limit_file_size(4096))
    envelope = json.loads(out.stdout.decode().strip())
    assert out.returncode == 1 and envelope["error"]["code"] == "disk_full", (envelope, out.stderr[-2000:])
    assert "Traceback" not in out.stderr.decode(errors="replace")
    assert _snapshot(root / "contextware_data") == before  # no partial file, no new version
    listed = json.loads(_run(root, "memory", "list", "--limit", "100").stdout)
    assert listed["total"] == 1  # the seeded fact only: the failed save was not committed
    assert _run(root, "save_fact", text).returncode == 0  # without the limit the same save works


@pytest.mark.slow
def test_a_damaged_table_is_damaged_data_with_exit_1(tmp_path, seeded):
    root = tmp_path / "proj"
    shutil.copytree(seeded["root"], root)
    for manifest in (root / "contextware_data" / "lancedb" / "facts.lance" / "_versions").iterdir():
        manifest.unlink()
    out = _run(root, "recall", "--query", "which port?")
    envelope = json.loads(out.stdout.decode().strip())
    assert out.returncode == 1 and envelope["error"]["code"] == "damaged_data"
    assert "memory.py repair" in envelope["error"]["message"]


@pytest.mark.slow
def test_a_file_where_the_lock_folder_belongs_is_one_clear_sentence(tmp_path, seeded):
    root = tmp_path / "proj"
    shutil.copytree(seeded["root"], root)
    locks = root / "contextware_data" / "locks"
    shutil.rmtree(locks, ignore_errors=True)
    locks.write_text("not a folder")
    before = _snapshot(root / "contextware_data")
    out = _run(root, "save_fact", "Deploys go through the staging cluster first.")
    envelope = json.loads(out.stdout.decode().strip())
    assert out.returncode == 1 and envelope["error"]["code"] == "storage_error", envelope
    assert "write-lock folder" in envelope["error"]["message"] and "move it aside" in envelope["error"]["message"]
    assert "Traceback" not in out.stderr.decode(errors="replace")
    assert _snapshot(root / "contextware_data") == before


def test_an_object_store_that_cannot_be_reached_is_a_storage_error_not_damage(tmp_path):
    """Lance reports an unreachable S3 endpoint as LanceError(IO), like a damaged file: the user must
    not be sent to `repair`, and credentials written into the URI never reach the output."""
    root = tmp_path / "proj"
    root.mkdir()
    uri = "s3://AKIAIOSFODNN7EXAMPLE:wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY@bucket/memory"
    env = {"CONTEXTWARE_DB_URI": uri, "AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_REGION": "us-east-1"}
    out = _run(root, "save_fact", "Deploys go through the staging cluster first.", env=env)
    envelope = json.loads(out.stdout.decode().strip())
    assert out.returncode == 1 and envelope["error"]["code"] == "storage_error", envelope
    assert "repair" not in envelope["error"]["message"]
    shown = out.stdout.decode() + out.stderr.decode(errors="replace")
    assert "AKIAIOSFODNN7EXAMPLE" not in shown and "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY" not in shown
    assert "[REDACTED:[REDACTED" not in shown  # one mask per secret, not a mask of a mask


def test_the_mcp_server_answers_bad_json_with_a_parse_error_and_goes_on(tmp_path):
    """JSON-RPC 2.0: text that is not JSON gets -32700, JSON that is not a message -32600 (the SDK
    alone answers neither); the server then answers the next request."""
    root = tmp_path / "proj"
    root.mkdir()
    lines = [b"this is not json\n", b'{"no": "jsonrpc"}\n', b'{"jsonrpc": "2.0", "id": 7, "method": "ping"}\n']
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPTS / "mcp_server.py")],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    watchdog = threading.Timer(60, proc.kill)
    watchdog.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b"".join(lines))
        proc.stdin.flush()
        answers = [proc.stdout.readline() for _ in lines]  # a client keeps stdin open until it has its answers
        proc.stdin.close()
        proc.wait(timeout=30)
    finally:
        watchdog.cancel()
    stderr = proc.stderr.read() if proc.stderr else b""
    replies = [json.loads(line) for line in answers]
    assert replies[0] == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": replies[0]["error"]["message"]},
    }
    assert replies[0]["error"]["message"].startswith("Parse error")
    assert replies[1]["error"]["code"] == -32600 and replies[1]["id"] is None
    assert replies[2] == {"jsonrpc": "2.0", "id": 7, "result": {}}
    assert proc.returncode == 0 and "Traceback" not in stderr.decode(errors="replace")
