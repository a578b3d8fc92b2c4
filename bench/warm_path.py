"""The warm path: hooks and scripts with and without the resident service, as agents and hosts run them.

    uv run bench/warm_path.py [--runs 20] [--cold-runs 6] [--aborts 0] [--gemini-turns 0] [--claude-turns 0]
                              [--only TEXT] [--checkout DIR] [--no-compile]

Project: 10,000 memory rows (8,000 facts, 2,000 episodes, embedded with the real model) and a code
index of 300 standard-library files (local summariser), built once and cached under
``$XDG_CACHE_HOME/contextware-bench`` (else ``~/.cache``); re-runs reuse it.

Each path is timed from process start to exit, as the caller sees it:

- the BeforeAgent hook exactly as the installer writes it (``.venv/bin/python scripts/hook.py``)
  and as it was written before (``uv run --no-sync --project . scripts/hook.py``);
- recall through ``uv run scripts/recall.py`` and through ``.venv/bin/python scripts/recall.py``;
- save through ``uv run scripts/save_fact.py`` (a new fact each run);

each with a warm service (``CONTEXTWARE_SERVICE=auto``, started beforehand) and without one
(``CONTEXTWARE_SERVICE=off``: the in-process path, as every call was before the service).  "cold"
is the first call with no service running (it starts one and leaves it warm).  ``--aborts N`` also
runs N fast-failing calls (bad input, in-process) and counts exits with code 134 (SIGABRT);
``--gemini-turns N`` times real Gemini CLI turns (``CONTEXTWARE_TEST_GEMINI_BIN``, against the local
fake API of the tests) without Contextware, with the extension as installed, and broken down (hooks
only, MCP server only, the SDK MCP server of before), plus each hook event and the MCP server's
discovery (``initialize`` + ``tools/list``) on their own; ``--claude-turns N`` times real Claude Code
turns (``claude -p``, ``CONTEXTWARE_TEST_CLAUDE_BIN``, local fake Anthropic API, throwaway HOME)
without Contextware, with the project install (hooks + MCP server), hooks only and MCP server only.
Prints medians and p95 in milliseconds as one JSON document.

The package's bytecode is compiled first, as ``install`` leaves it (a process that may not write
``__pycache__``, e.g. under PYTHONDONTWRITEBYTECODE, would otherwise compile the hook's modules on
every run); ``--no-compile`` times the checkout as it is.  ``--checkout DIR`` times the scripts and
environment (``DIR/.venv``) of another checkout, e.g. the main branch, on the same fixture, so two
versions can be compared back to back on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

FIXTURE_VERSION = "2"  # 2: the code index has its definitions (chunks) table
FACTS, EPISODES, FILES = 8000, 2000, 300
VENV_PY = REPO / ".venv" / "bin" / "python"
COMPONENTS = [
    "billing",
    "auth",
    "search",
    "export",
    "ingest",
    "scheduler",
    "mailer",
    "gateway",
    "cache",
    "reports",
    "uploads",
    "audit",
]
TECH = [
    "postgres",
    "redis",
    "kafka",
    "s3",
    "celery",
    "grpc",
    "nginx",
    "terraform",
    "pytest",
    "docker",
    "sqlite",
    "rabbitmq",
]
REASONS = ["latency", "cost", "compliance", "simplicity", "throughput", "reliability", "team-skills", "vendor-support"]


def cache_root() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "contextware-bench" / f"warm-path-v{FIXTURE_VERSION}"


def _fact_text(i: int) -> str:
    c, t, r = COMPONENTS[i % 12], TECH[(i // 12) % 12], REASONS[(i // 144) % 8]
    return f"Decision {i}: the {c} service uses {t} for its queue number {i % 97}, chosen for {r}."


def _insert(project, collection: str, rows: list[dict]) -> None:
    import pyarrow as pa

    from contextware.storage.embedded_text import embedding_text, search_text

    embedder = project.embedder
    vectors = embedder.embed([embedding_text(collection, r) for r in rows])
    for row, vector in zip(rows, vectors, strict=True):
        row["vector"] = vector.tolist()
        row["search_text"] = search_text(collection, row)
    project.db.write(
        collection,
        lambda tbl: tbl.add(pa.Table.from_pylist(rows, schema=tbl.schema)),
        dim=embedder.dim,
        model_id=embedder.model_id,
    )


def build_fixture(root: Path) -> None:
    """10k memory rows through the library in batches of 1,000, and a crawl of 300 files."""
    from stdlib_corpus import build_corpus, select

    from contextware.codeindex.indexer import crawl
    from contextware.core.text import new_id, text_hash, utcnow
    from contextware.storage.project import Project

    if root.exists():
        shutil.rmtree(root)
    (root / ".git").mkdir(parents=True)
    paths = select()[:FILES]
    build_corpus(root / "_all")
    for rel in paths:
        dest = root / "src" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / "_all" / rel, dest)
    shutil.rmtree(root / "_all")
    project = Project.open(root)
    project.ensure_data_dir()
    now = utcnow()
    for start in range(0, FACTS, 1000):
        rows = []
        for i in range(start, start + 1000):
            text = _fact_text(i)
            rows.append(
                {
                    "id": new_id("fact"),
                    "text": text,
                    "kind": "decision",
                    "topics": [COMPONENTS[i % 12]],
                    "source": "bench",
                    "created_at": now,
                    "updated_at": now,
                    "status": "active",
                    "supersedes": None,
                    "superseded_by": None,
                    "text_hash": text_hash(text),
                }
            )
        _insert(project, "facts", rows)
        print(f"facts {start + 1000}/{FACTS}", file=sys.stderr)
    for start in range(0, EPISODES, 1000):
        rows = []
        for i in range(start, start + 1000):
            goal = f"Fix flaky {COMPONENTS[i % 12]} test number {i}"
            summary = f"The {TECH[i % 12]} fixture leaked state between tests; isolating it fixed run {i}."
            rows.append(
                {
                    "id": new_id("episode"),
                    "goal": goal,
                    "result": ("success", "failure", "partial")[i % 3],
                    "category": "test",
                    "summary": summary,
                    "topics": [COMPONENTS[i % 12]],
                    "source": "bench",
                    "created_at": now,
                    "updated_at": now,
                    "text_hash": text_hash(goal, summary),
                }
            )
        _insert(project, "episodes", rows)
    crawl(project, summarizer="local")
    for name in project.db.table_names():
        project.db.compact(name)
    (root / "ready.json").write_text(json.dumps({"facts": FACTS, "episodes": EPISODES, "files": FILES}))


def _stats(samples: list[float]) -> dict:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50": round(statistics.median(ordered) * 1000), "p95": round(p95 * 1000), "n": len(ordered)}


def _run(cmd: list[str], root: Path, env: dict, stdin: str | None = None) -> tuple[float, subprocess.CompletedProcess]:
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=root, env=env, input=stdin, capture_output=True, text=True, timeout=300)
    return time.perf_counter() - t, proc


def _ours(env: dict) -> dict:
    """Contextware's own settings in ``env`` (its home, the service mode), for a host's environment."""
    return {k: v for k, v in env.items() if k.startswith("CONTEXTWARE_")}


def _service(root: Path, env: dict, action: str) -> dict:
    _, proc = _run([str(VENV_PY), str(REPO / "scripts" / "service.py"), action], root, env)
    return json.loads(proc.stdout)


SDK_SERVER = "from contextware.hosts.mcp.server import build_server; build_server().run('stdio')"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
}


def mcp_discovery(root: Path, env: dict, runs: int) -> dict:
    """``initialize`` + ``tools/list`` as a host's discovery does it, from process start to the list:
    the stdlib front as installed, and the SDK server it replaced."""
    out = {}
    for label, cmd in (
        ("front (scripts/mcp_server.py)", [str(VENV_PY), str(REPO / "scripts" / "mcp_server.py")]),
        ("SDK server (before)", [str(VENV_PY), "-c", SDK_SERVER]),
    ):
        samples = []
        for _ in range(runs):
            t = time.perf_counter()
            proc = subprocess.Popen(cmd, cwd=root, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write((json.dumps(INIT) + "\n").encode())
            proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
            proc.stdin.write(b'{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}\n')
            proc.stdin.flush()
            proc.stdout.readline()
            assert json.loads(proc.stdout.readline())["result"]["tools"]
            samples.append(time.perf_counter() - t)
            proc.stdin.close()
            proc.wait(timeout=60)
        out[label] = _stats(samples)
    return out


def mid_session(root: Path) -> str:
    """A new session id, marked as briefed in the fixture: a prompt in it is a prompt of a session
    under way.  Every timed hook needs a session of its own: a host never sends one event twice, and
    a repeat is answered from the once-marker (``hooks.once``: nothing at all) or leaves out the
    memories it injected already; a session's first prompt also carries the briefing (Gemini CLI)."""
    from contextware.hosts.hooks.briefed import mark_briefed

    session = f"bench-{time.time_ns()}"
    mark_briefed(root / "contextware_data", session)
    return session


def hook_events(root: Path, env: dict, runs: int) -> dict:
    """Each hook event Gemini CLI runs on a ``gemini -p`` turn, as installed, with a warm service."""
    base = {"session_id": "bench", "transcript_path": "", "cwd": str(root), "timestamp": "2026-01-01T00:00:00Z"}
    events = {
        "SessionStart": {**base, "hook_event_name": "SessionStart", "source": "startup"},
        "BeforeAgent": {**base, "hook_event_name": "BeforeAgent", "prompt": "which queue does billing use?"},
        "AfterAgent": {
            **base,
            "hook_event_name": "AfterAgent",
            "prompt": "which queue does billing use?",
            "prompt_response": "Billing uses kafka.",
        },
    }
    _service(root, env, "start")
    out = {}
    for event, payload in events.items():
        samples = []
        for _ in range(runs + 1):
            # a session of its own each run (``mid_session``); SessionStart's is a new one
            session = f"bench-{time.time_ns()}" if event == "SessionStart" else mid_session(root)
            sent = json.dumps({**payload, "session_id": session})
            took, proc = _run([str(VENV_PY), str(REPO / "scripts" / "hook.py")], root, env, sent)
            assert proc.returncode == 0, proc.stderr
            samples.append(took)
        out[event] = _stats(samples[1:])
    return out


def _interleaved_turns(
    root: Path,
    env: dict,
    labels: list[str],
    switch: Callable[[str], None],
    command: Callable[[int], list[str]],
    turns: int,
    host: str,
    proof: tuple[str, Callable[[], bool]] | None = None,
) -> dict[str, dict]:
    """Whole host turns (process start to exit) of each setup, round-robin: ``switch(label)``, one
    turn, the next setup, ``turns + 1`` rounds (each starting one setup later), the first dropped (it
    warms caches).  A load that changes during the run so weighs on every setup alike.  ``service_requests`` counts what the warm
    service answered during a setup's turns: proof its hooks ran (0 without Contextware); ``proof``
    (key, check) counts the turns after which ``check()`` held, under that key."""
    samples: dict[str, list[float]] = {label: [] for label in labels}
    served, proved = dict.fromkeys(labels, 0), dict.fromkeys(labels, 0)
    _service(root, env, "start")
    for i in range(turns + 1):
        for label in labels[i % len(labels) :] + labels[: i % len(labels)]:  # each setup first in turn
            switch(label)
            before = _service(root, env, "status").get("requests", 0)
            took, proc = _run(command(i), root, env, stdin="")
            assert proc.returncode == 0, (label, proc.stdout[-1000:], proc.stderr[-2000:])
            if i:
                samples[label].append(took)
            served[label] += _service(root, env, "status").get("requests", 0) - before - 1  # - the status call
            proved[label] += bool(proof and proof[1]())
        print(f"{host} turns: round {i} done", file=sys.stderr)
    extra = lambda label: {proof[0]: proved[label]} if proof else {}  # noqa: E731
    return {
        label: {**_stats(taken), "service_requests": served[label], **extra(label)} for label, taken in samples.items()
    }


def _with_added(results: dict) -> dict:
    """``results`` with ``added_p50``: each setup's median turn minus the median turn ``without``."""
    p50 = results["without"]["p50"]
    results["added_p50"] = {
        label: stats["p50"] - p50
        for label, stats in results.items()
        if label != "without" and isinstance(stats, dict) and "p50" in stats
    }
    return results


def claude_turns(root: Path, turns: int, base_env: dict) -> dict:
    """A real Claude Code turn (``claude -p``, ``CONTEXTWARE_TEST_CLAUDE_BIN`` or the tests' pinned
    install) against the tests' local fake Anthropic API, with a throwaway HOME: without Contextware,
    with the project install exactly as ``install.py claude --project`` writes it (hooks in
    ``.claude/settings.json`` running ``contextware hook`` from PATH, the MCP server in ``.mcp.json``,
    the skill), hooks only and MCP server only; the setups take turns round-robin and are switched by
    writing or removing the installed files.  ``mcp_tools_seen`` counts the turns whose model request
    listed our MCP tools: proof the server was discovered (Claude Code waits for it before the turn)."""
    import tempfile

    from tests.support.claude_fixtures import installed_claude_bin, make_claude_env
    from tests.support.fake_anthropic_api import FakeAnthropicAPI

    claude = installed_claude_bin()
    if not claude:
        return {"skipped": "no Claude Code (set CONTEXTWARE_TEST_CLAUDE_BIN)"}
    api = FakeAnthropicAPI()
    api.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "home").mkdir()
            env = {**make_claude_env(Path(tmp) / "home", api.base_url), **_ours(base_env)}
            env["PATH"] = f"{VENV_PY.parent}{os.pathsep}{env['PATH']}"  # `contextware` of the timed checkout
            install = [str(VENV_PY), str(REPO / "scripts" / "install.py")]
            _, proc = _run([*install, "claude", "--project"], root, env)
            assert json.loads(proc.stdout)["changed"], proc.stdout
            written = {rel: (root / rel).read_text() for rel in json.loads(proc.stdout)["written"]}
            setups = {
                "without": set(),
                "project install (hooks + MCP)": set(written),
                "hooks only": set(written) - {".mcp.json"},
                "MCP server only": set(written) - {".claude/settings.json"},
            }

            def switch(label: str) -> None:
                api.requests.clear()
                for rel, text in written.items():
                    if rel in setups[label]:
                        (root / rel).parent.mkdir(parents=True, exist_ok=True)
                        (root / rel).write_text(text)
                    else:
                        (root / rel).unlink(missing_ok=True)

            def seen() -> bool:  # a tool no hook text names, in the request's tools or its deferred tools
                return any("mcp__contextware__delete_memory" in json.dumps(r.body) for r in api.message_requests())

            try:
                cmd = lambda i: [claude, "-p", f"Question {i}: which queue?", "--output-format", "json"]  # noqa: E731
                results = _interleaved_turns(
                    root, env, list(setups), switch, cmd, turns, "claude", ("mcp_tools_seen", seen)
                )
            finally:
                switch("project install (hooks + MCP)")
                _run([*install, "uninstall", "claude", "--project"], root, env)
            _service(root, env, "stop")
    finally:
        api.stop()
    return _with_added(results)


def gemini_turns(root: Path, turns: int, base_env: dict) -> dict:
    """A real Gemini CLI turn against the local fake API (medians of ``turns`` turns after the first
    of each setup): without Contextware; with the linked extension exactly as ``install.py gemini``
    writes it (hooks and MCP server); with the project install (``install.py gemini --project
    --python``), and that install cut down to show each part's share: hooks only, MCP server only,
    and hooks with the SDK MCP server the stdlib front replaced.  The setups take turns round-robin
    (one turn each, then again), so a load that changes during the run weighs on all of them alike;
    a setup is switched by moving the extension's link and the project's ``.gemini`` folder aside
    and by rewriting ``.gemini/settings.json``.  Gemini CLI runs the SessionStart, BeforeAgent and
    AfterAgent hooks on each ``-p`` turn and waits for every configured MCP server's discovery."""
    import tempfile

    from tests.support.fake_gemini_api import FakeGeminiAPI
    from tests.support.gemini_fixtures import make_gemini_env, write_gemini_home

    gemini = os.environ.get("CONTEXTWARE_TEST_GEMINI_BIN") or shutil.which("gemini")
    if not gemini:
        return {"skipped": "no Gemini CLI (set CONTEXTWARE_TEST_GEMINI_BIN)"}
    api = FakeGeminiAPI().start()
    results: dict = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            home = write_gemini_home(Path(tmp) / "home")
            (home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(root): "TRUST_FOLDER"}))
            ours = _ours(base_env)
            env = {**make_gemini_env(home, api.base_url, tmpdir=Path(tmp) / "t"), **ours}
            install_env = {**env, "CONTEXTWARE_GEMINI_BIN": gemini}
            install = [str(VENV_PY), str(REPO / "scripts" / "install.py")]
            link, link_off = home / ".gemini" / "extensions" / "contextware", Path(tmp) / "extension-off"
            project, project_off = root / ".gemini", Path(tmp) / "project-gemini-off"

            _, proc = _run([*install, "gemini"], root, install_env)
            assert json.loads(proc.stdout)["ok"], proc.stdout
            _, proc = _run([*install, "gemini", "--project", "--python", str(VENV_PY)], root, env)
            assert json.loads(proc.stdout)["ok"], proc.stdout
            installed = json.loads((project / "settings.json").read_text())
            sdk = {**installed["mcpServers"]["contextware"], "args": ["-c", SDK_SERVER]}
            project_settings = {  # None: no project install at all
                "without": None,
                "extension as installed (hooks + MCP)": None,
                "project install (hooks + MCP)": installed,
                "hooks only": {k: v for k, v in installed.items() if k != "mcpServers"},
                "MCP server only": {**installed, "hooks": {}},
                "hooks + SDK MCP server (before)": {**installed, "mcpServers": {"contextware": sdk}},
            }

            def switch(label: str) -> None:
                want_link = label.startswith("extension")
                if want_link != link.exists():
                    os.replace(*((link_off, link) if want_link else (link, link_off)))
                settings = project_settings[label]
                if (settings is not None) != project.exists():
                    os.replace(*((project_off, project) if settings is not None else (project, project_off)))
                if settings is not None:
                    (project / "settings.json").write_text(json.dumps(settings, indent=2))

            try:
                cmd = lambda i: [gemini, "-m", "gemini-2.5-flash", "-o", "json", "-p", f"Question {i}: which queue?"]  # noqa: E731
                results.update(_interleaved_turns(root, env, list(project_settings), switch, cmd, turns, "gemini"))
            finally:
                switch("project install (hooks + MCP)")
                _run([*install, "uninstall", "--project"], root, env)
                switch("extension as installed (hooks + MCP)")
                _run([*install, "uninstall"], root, install_env)
            results["hook_events_ms (warm service)"] = hook_events(root, {**env, **ours}, turns)
            results["mcp_discovery_ms"] = mcp_discovery(root, env, turns)
            _service(root, env, "stop")
    finally:
        api.stop()
    return _with_added(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20, help="runs of each warm path")
    parser.add_argument("--cold-runs", type=int, default=6, help="runs of each path without a service")
    parser.add_argument("--aborts", type=int, default=0, help="fast-failing runs to count SIGABRT exits in")
    parser.add_argument(
        "--gemini-turns", type=int, default=0, help="real Gemini CLI turns (fake API) without/with the extension"
    )
    parser.add_argument(
        "--claude-turns", type=int, default=0, help="real Claude Code turns (fake API) without/with the project install"
    )
    parser.add_argument("--checkout", type=Path, help="time the scripts and .venv of this checkout instead")
    parser.add_argument(
        "--only", action="append", default=[], metavar="TEXT", help="time only the paths whose name contains TEXT"
    )
    parser.add_argument("--no-compile", action="store_true", help="do not compile the package's bytecode first")
    args = parser.parse_args()
    global REPO, VENV_PY
    if args.checkout is not None:
        REPO = args.checkout.resolve()
        VENV_PY = REPO / ".venv" / "bin" / "python"
    if not args.no_compile:
        subprocess.run([str(VENV_PY), "-m", "compileall", "-q", str(REPO / "contextware")], check=False)
    root = cache_root() / "project"
    home = cache_root() / "home"
    os.environ["CONTEXTWARE_HOME"] = str(home)
    if not (root / "ready.json").exists():
        t = time.perf_counter()
        build_fixture(root)
        print(f"fixture built in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    uv = shutil.which("uv")
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXTWARE_")}
    base_env["CONTEXTWARE_HOME"] = str(home)
    on, off = {**base_env, "CONTEXTWARE_SERVICE": "auto"}, {**base_env, "CONTEXTWARE_SERVICE": "off"}
    script = lambda name: str(REPO / "scripts" / f"{name}.py")  # noqa: E731

    def event() -> str:
        """A prompt in a session under way (briefed already), a new one each run (see
        ``mid_session``): every run is answered in full, as a prompt is the first time its memory
        is relevant."""
        return json.dumps(
            {
                "session_id": mid_session(root),
                "transcript_path": "",
                "cwd": str(root),
                "hook_event_name": "BeforeAgent",
                "timestamp": "2026-01-01T00:00:00Z",
                "prompt": "which queue does the billing service use and why?",
            }
        )

    uv_run = [uv, "run", "--project", str(REPO)] if uv else None
    counter = iter(range(10**9))
    paths = {
        "hook_before_agent (as installed: .venv/bin/python scripts/hook.py)": (
            lambda: [str(VENV_PY), script("hook")],
            event,
        ),
        "recall (direct: .venv/bin/python scripts/recall.py)": (
            lambda: [str(VENV_PY), script("recall"), "--query", "which queue does billing use?"],
            lambda: None,
        ),
    }
    if uv_run:
        paths["recall (uv run scripts/recall.py)"] = (
            lambda: [*uv_run, script("recall"), "--query", "which queue does billing use?"],
            lambda: None,
        )
        paths["save (uv run scripts/save_fact.py)"] = (
            lambda: [*uv_run, script("save_fact"), f"Bench save {time.time_ns()}-{next(counter)}: cache TTL is 5m."],
            lambda: None,
        )
        paths["hook_before_agent (before: uv run --no-sync scripts/hook.py)"] = (
            lambda: [str(uv), "run", "--no-sync", "--project", str(REPO), script("hook")],
            event,
        )
    if args.only:
        paths = {name: path for name, path in paths.items() if any(text in name for text in args.only)}
    report: dict = {"fixture": {"facts": FACTS, "episodes": EPISODES, "code_files": FILES, "path": str(root)}}
    report["checkout"] = {"path": str(REPO), "bytecode_compiled_first": not args.no_compile}
    report["load_average_at_start"] = os.getloadavg()[0]
    _service(root, on, "stop")
    results: dict = {}
    for name, (cmd, stdin) in paths.items() if args.runs and args.cold_runs else ():
        if "before:" in name:
            modes = [("no service", off, args.cold_runs)]
        else:
            modes = [("no service", off, args.cold_runs), ("warm service", on, args.runs)]
        results[name] = {}
        for label, env, runs in modes:
            if label == "warm service":
                _service(root, on, "start")
                _run(cmd(), root, env, stdin())  # one call to warm the path's own files
            samples = []
            for _ in range(runs):
                sent = stdin()
                took, proc = _run(cmd(), root, env, sent)
                assert proc.returncode == 0, proc.stdout + proc.stderr
                if sent is None:
                    assert json.loads(proc.stdout)["ok"], proc.stdout
                else:  # the hook answered: its full path was timed, not a silent one
                    assert "additionalContext" in proc.stdout, proc.stdout + proc.stderr
                samples.append(took)
            results[name][label] = _stats(samples)
        if "before:" not in name:  # the first call with no service: starts one and waits for it
            cold = []
            for _ in range(max(2, args.cold_runs // 2)):
                _service(root, on, "stop")
                took, proc = _run(cmd(), root, on, stdin())
                assert proc.returncode == 0, proc.stdout + proc.stderr
                cold.append(took)
            results[name]["cold start (auto)"] = _stats(cold)
            _service(root, on, "stop")
    report["ms"] = results
    if args.aborts:
        codes = []
        for i in range(args.aborts):
            failing: list[str] = (
                [str(VENV_PY), script("save_fact"), "x", "--kind", "bogus"]
                if i % 2
                else [str(VENV_PY), script("recall"), "--query", "x", "--scope", "bogus"]
            )
            codes.append(_run(failing, root, off)[1].returncode)
        report["fast_failures"] = {
            "runs": len(codes),
            "sigabrt_134": codes.count(134),
            "exit_codes": sorted(set(codes)),
        }
    if args.gemini_turns:
        report["gemini_cli_turn_ms"] = gemini_turns(root, args.gemini_turns, on)
    if args.claude_turns:
        report["claude_code_turn_ms"] = claude_turns(root, args.claude_turns, on)
    report["load_average_at_end"] = os.getloadavg()[0]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
