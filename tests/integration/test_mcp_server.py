"""The MCP server, driven over stdio by the official `mcp` client the way Claude Code, Cursor and Gemini
CLI drive it: `sys.executable scripts/mcp_server.py` spawned in a temporary project."""

from __future__ import annotations

import json
import random
import selectors
import subprocess
import sys
import textwrap
import time

import anyio

from contextware.core.fence import FENCE_CLOSE, FENCE_OPEN
from contextware.storage.embedded_text import FAMILIES
from tests.support.mcp_client import CONTRACT, INITIALIZE, NO_DEFAULT, SERVER, call, error, run, serve

HEAVY = ("lancedb", "pyarrow", "onnxruntime", "tokenizers", "fastembed", "pandas", "polars")

# The tool contract itself (names, parameters, types, defaults) is CONTRACT in tests/support/mcp_client.py
# (test_mcp_memory_tools.py checks `contextware mcp` against it too).
# Annotations per tool: (readOnlyHint, destructiveHint, idempotentHint, openWorldHint); None: not set
# (the spec's defaults apply: destructive and idempotent hints mean nothing for a read-only tool).
ANNOTATIONS: dict[str, tuple[bool | None, bool | None, bool | None, bool | None]] = {
    "save_fact": (False, False, True, False),
    "recall": (True, None, None, False),  # refresh_stale only re-reads changed files into the index
    "index_file": (False, False, True, True),  # the auto summariser may call Gemini's API
    "offload": (False, False, False, True),
    "session_store": (False, True, False, False),
    "load_session_context": (True, None, None, False),
    "list_memories": (True, None, None, False),
    "get_memory": (True, None, None, False),
    "update_memory": (False, True, True, False),
    "delete_memory": (False, True, True, False),
    "memory_history": (True, None, None, False),
    "confirm_memory": (False, False, True, False),
    "memory_stats": (True, None, None, False),
    "crawl_project": (False, False, True, True),
}


def test_start_up_is_quick_and_the_tool_contract_is_pinned(project_dir):
    async def go() -> None:
        started = time.monotonic()
        async with serve(project_dir) as client:
            listed = (await client.list_tools()).tools
            elapsed = time.monotonic() - started
            assert client.server_info.name == "contextware"
            assert "recall" in (client.instructions or "")
        # ~20 ms quiet (the stdlib front): the heavy libraries load on the first tool call, never at start-up (a bound with
        # room for a loaded machine; bench/ measures it)
        assert elapsed < 6, f"initialize + tools/list took {elapsed:.2f} s"
        tools = {t.name: t for t in listed}
        assert list(tools) == list(CONTRACT)
        for name, (params, required) in CONTRACT.items():
            schema = tools[name].input_schema
            assert schema["type"] == "object"
            assert sorted(schema.get("required", [])) == sorted(required), name
            props = schema["properties"]
            assert list(props) == list(params), name
            for param, (kind, enum, default) in params.items():
                prop = props[param]
                assert prop.get("type") == kind, (name, param, prop)
                assert prop.get("enum") == enum, (name, param, prop)
                assert prop.get("default", NO_DEFAULT) == default, (name, param, prop)
                assert len(prop.get("description", "")) > 10, (name, param)
                if kind == "array":
                    assert prop["items"] == {"type": "string"}
            assert "$ref" not in json.dumps(schema) and "anyOf" not in json.dumps(schema), name
            assert len(tools[name].description or "") > 80, name
        limit = tools["recall"].input_schema["properties"]["limit"]
        assert (limit["minimum"], limit["maximum"]) == (1, 100)
        assert list(ANNOTATIONS) == list(CONTRACT)
        for name, hints in ANNOTATIONS.items():
            a = tools[name].annotations
            got = (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint)
            assert got == hints, (name, got)
            assert tools[name].title, name

    run(go)


def test_heavy_libraries_load_on_the_first_tool_call_not_at_start(project_dir):
    """Importing the server, building it and answering initialize + tools/list load no heavy library;
    the first tool call does (in-process client, so sys.modules can be inspected)."""
    code = textwrap.dedent(f"""
        import sys, anyio
        HEAVY = {HEAVY!r}
        heavy = lambda: sorted({{m.split('.')[0] for m in sys.modules if m.split('.')[0] in HEAVY}})
        import contextware.hosts.mcp.server as m
        server = m.build_server()
        from mcp import Client
        async def go():
            async with Client(server, mode="legacy") as client:
                await client.list_tools()
                print("before", heavy())
                result = await client.call_tool("save_fact", {{"content": "We use uv."}})
                assert not result.is_error, result
                print("after", heavy())
        anyio.run(go)
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=project_dir, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in out.stdout.strip().splitlines())
    assert lines["before"] == "[]"
    assert "lancedb" in lines["after"] and "onnxruntime" in lines["after"]


def _readline(proc: subprocess.Popen, timeout: float = 60) -> str:
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    assert sel.select(timeout), "the server did not answer in time"
    return proc.stdout.readline().decode()


def test_stdout_carries_only_the_protocol(project_dir):
    """Raw JSON-RPC, as a client sends it: every stdout line is a JSON-RPC message, even while the
    database and the model load; logs and stray output go to stderr."""
    proc = subprocess.Popen(
        [sys.executable, str(SERVER)],
        cwd=project_dir,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    lines: list[str] = []
    try:

        def send(message: dict) -> None:
            proc.stdin.write((json.dumps(message) + "\n").encode())
            proc.stdin.flush()

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE})
        lines.append(_readline(proc))
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {
                    "name": "save_fact",
                    "arguments": {"content": "The CI runs on GitHub Actions.", "kind": "environment"},
                },
            }
        )
        lines.append(_readline(proc))
        send(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "recall", "arguments": {"query": "which CI do we use?"}},
            }
        )
        lines.append(_readline(proc))
        rest, _err = proc.communicate(timeout=30)  # closes stdin: the server exits
        lines += rest.decode().splitlines()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    messages = [json.loads(line) for line in lines if line.strip()]
    assert all(m.get("jsonrpc") == "2.0" for m in messages)
    by_id = {m.get("id"): m for m in messages}
    assert by_id[1]["result"]["serverInfo"]["name"] == "contextware"
    saved = by_id[2]["result"]["structuredContent"]
    assert saved["ok"] is True and saved["id"].startswith("fact-")
    found = by_id[3]["result"]["structuredContent"]["results"]
    assert found and found[0]["id"] == saved["id"]
    assert proc.returncode == 0


def test_save_fact_then_recall(project_dir):
    async def go() -> None:
        async with serve(project_dir) as client:
            saved = await call(
                client,
                "save_fact",
                {
                    "content": "Deploy with `fly deploy`; never push to heroku.",
                    "kind": "decision",
                    "topics": ["deploy", "ops"],
                },
            )
            assert saved["collection"] == "facts" and saved["id"].startswith("fact-")
            again = await call(client, "save_fact", {"content": "Deploy with `fly deploy`; never push to heroku."})
            assert again["duplicate_of"] == saved["id"]
            episode = await call(
                client,
                "save_fact",
                {
                    "type": "episode",
                    "goal": "Run tests in parallel",
                    "result": "failure",
                    "category": "test",
                    "content": "pytest -n auto deadlocked on the shared DB fixture; distributing by file fixed it.",
                },
            )
            assert episode["collection"] == "episodes"

            found = await call(client, "recall", {"query": "how do we deploy the app?"})
            assert found["results"][0]["id"] == saved["id"]
            assert found["results"][0]["kind"] == "decision" and found["degraded"] is None
            only = await call(client, "recall", {"query": "parallel tests", "scope": "episodes", "result": "failure"})
            assert [r["id"] for r in only["results"]] == [episode["id"]]
            by_topic = await call(client, "recall", {"query": "deploy", "topic": "ops", "limit": 1})
            assert [r["id"] for r in by_topic["results"]] == [saved["id"]]

            # Errors are the plain functions' own codes, as on the command line.
            assert await error(client, "save_fact", {"content": "  "}) == "empty_content"
            assert await error(client, "save_fact", {"content": "x", "kind": "wish"}) == "bad_kind"
            assert await error(client, "save_fact", {"content": "x", "goal": "g"}) == "bad_option"
        assert (project_dir / "contextware_data").is_dir()

    run(go)


def test_bad_input_is_a_tool_error_with_the_code(project_dir):
    async def go() -> None:
        async with serve(project_dir) as client:
            assert await error(client, "recall", {"query": ""}) == "empty_query"
            assert await error(client, "recall", {"query": "tests", "scope": "everything"}) == "bad_scope"
            assert await error(client, "recall", {"query": "tests", "mode": "full"}) == "bad_mode"
            assert await error(client, "recall", {"query": "tests", "limit": 0}) == "bad_limit"
            assert await error(client, "recall", {"query": "tests", "since": "last tuesday"}) == "bad_since"
            # What the SDK would reject in its own words comes back in the envelope too.
            assert await error(client, "recall", {"query": "tests", "limit": "many"}) == "bad_arguments"
            assert await error(client, "recall", {}) == "bad_arguments"
            assert await error(client, "recall", {"query": "tests", "global": True}) == "unknown_argument"
            assert await error(client, "forget_everything", {}) == "unknown_tool"
            assert await error(client, "load_session_context", {"budget_tokens": 5}) == "bad_budget"
            assert await error(client, "session_store", {"action": "drop"}) == "bad_action"
        assert not (project_dir / "contextware_data").exists()  # bad input writes nothing

    run(go)


def test_session_store_round_trip(project_dir):
    async def go() -> None:
        async with serve(project_dir) as client:
            value = {"p95_ms": 120, "routes": ["GET /users"], "flaky": None}
            saved = await call(
                client,
                "session_store",
                {"action": "save", "namespace": "baselines", "key": "GET /users", "data": value},
            )
            assert saved["created"] is True and saved["evicted"] == []
            await call(
                client, "session_store", {"action": "save", "namespace": "schemas", "key": "api", "data": [1, "two"]}
            )
            await call(client, "session_store", {"action": "save", "namespace": "schemas", "key": "none", "data": None})

            loaded = await call(
                client, "session_store", {"action": "load", "namespace": "baselines", "key": "GET /users"}
            )
            assert loaded["data"] == value
            assert (await call(client, "session_store", {"action": "load", "namespace": "schemas", "key": "none"}))[
                "data"
            ] is None
            listed = await call(client, "session_store", {"action": "list"})
            assert [(k["namespace"], k["key"]) for k in listed["keys"]] == [
                ("baselines", "GET /users"),
                ("schemas", "api"),
                ("schemas", "none"),
            ]
            only = await call(client, "session_store", {"action": "list", "namespace": "schemas"})
            assert only["count"] == 2
            stats = await call(client, "session_store", {"action": "stats"})
            assert stats["keys"] == 3 and {n["namespace"] for n in stats["namespaces"]} == {"baselines", "schemas"}

            deleted = await call(client, "session_store", {"action": "delete", "namespace": "schemas", "key": "*"})
            assert deleted["count"] == 2
            assert (
                await error(client, "session_store", {"action": "load", "namespace": "schemas", "key": "api"})
                == "not_found"
            )
            assert (
                await error(client, "session_store", {"action": "save", "namespace": "a/b", "key": "k", "data": 1})
                == "bad_namespace"
            )
            assert await error(client, "session_store", {"action": "save", "namespace": "n", "key": "k"}) == "bad_data"
            assert await error(client, "session_store", {"action": "stats", "key": "k"}) == "bad_option"
            assert (await call(client, "session_store", {"action": "stats"}))["keys"] == 1

    run(go)


def test_load_session_context_fits_the_budget(project_dir):
    async def go() -> None:
        async with serve(project_dir) as client:
            await call(
                client, "save_fact", {"content": "Never commit directly to main; open a PR.", "kind": "constraint"}
            )
            # thirty different preferences (the briefing shows near-duplicates once)
            words = FAMILIES.split()
            for i in range(30):
                await call(
                    client,
                    "save_fact",
                    {
                        "content": f"Preference {i}: " + " ".join(random.Random(i).sample(words, 8)) + ".",
                        "kind": "preference",
                    },
                )
            result = await client.call_tool("load_session_context", {"budget_tokens": 200})
            assert not result.is_error
            markdown = result.content[0].text
            envelope = result.structured_content
            assert envelope["ok"] is True and envelope["markdown"] == markdown
            # The briefing is fenced as reference data; the budget holds for the briefing inside.
            assert markdown.startswith(FENCE_OPEN) and markdown.endswith(FENCE_CLOSE)
            body = markdown[len(FENCE_OPEN) : -len(FENCE_CLOSE)].split("\n\n", 1)[1].strip()
            assert body.startswith("# Project memory: proj")
            assert "Never commit directly to main" in body
            assert len(body) <= 200 * 4 and envelope["tokens"] <= 200 and envelope["truncated"] is True
            as_json = await call(client, "load_session_context", {"format": "json"})
            assert as_json["truncated"] is False and len(as_json["preferences"]) == 30

    run(go)


def test_index_file_then_recall_code_with_project_root_from_the_environment(project_dir, tmp_path):
    """The server runs elsewhere (as a client may start it); CONTEXTWARE_PROJECT_ROOT names the project
    and relative paths are relative to it."""
    (project_dir / "billing").mkdir()
    (project_dir / "billing" / "invoices.py").write_text(
        textwrap.dedent('''
        """Invoice generation: totals, VAT and PDF rendering for customer invoices."""


        def compute_vat(amount: float, rate: float) -> float:
            """The VAT due on an amount."""
            return amount * rate


        class InvoiceRenderer:
            """Render an invoice as a PDF document."""
    ''')
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    async def go() -> None:
        async with serve(elsewhere, {"CONTEXTWARE_PROJECT_ROOT": str(project_dir)}) as client:
            report = await call(client, "index_file", {"paths": ["billing/invoices.py"], "summarizer": "local"})
            assert report["indexed"] == 1 and report["indexed_files"] == ["billing/invoices.py"]
            again = await call(client, "index_file", {"paths": ["billing/invoices.py"], "summarizer": "local"})
            assert again["indexed"] == 0 and again["unchanged"] == 1
            found = await call(client, "recall", {"query": "where do we compute VAT on invoices?", "scope": "code"})
            hit = found["results"][0]
            assert (
                hit["file_path"] == "billing/invoices.py" and "compute_vat" in hit["symbols"] and hit["stale"] is False
            )
            assert await error(client, "index_file", {"paths": []}) == "no_paths"
            assert (
                await error(client, "index_file", {"paths": ["billing/invoices.py"], "summarizer": "smart"})
                == "bad_summarizer"
            )
        assert (project_dir / "contextware_data").is_dir() and not (elsewhere / "contextware_data").exists()

    run(go)


def test_offload_without_gemini_is_a_clear_error(project_dir):
    async def go() -> None:
        async with serve(project_dir, {"CONTEXTWARE_GEMINI_BIN": str(project_dir / "no-such-gemini")}) as client:
            result = await client.call_tool("offload", {"prompt": "How does request routing work end to end?"})
            assert result.is_error
            err = json.loads(result.content[0].text)["error"]
            assert err["code"] == "gemini_not_installed" and "Gemini CLI" in err["message"]
            assert await error(client, "offload", {"prompt": " "}) == "empty_prompt"
            assert await error(client, "offload", {"prompt": "Review", "files": ["missing.py"]}) == "file_not_found"
            assert (
                await error(client, "offload", {"prompt": "Review", "refresh": True, "session": "s-1"}) == "bad_option"
            )

    run(go)


def test_parallel_first_calls(project_dir):
    """Clients issue tool calls in parallel, the first ones while the heavy libraries are still loading
    (here over the 2026 stateless protocol, which the SDK's client negotiates by default)."""

    async def go() -> None:
        async with serve(project_dir, mode="auto") as client:
            out: dict[int, dict] = {}

            async def one(i: int, tool: str, args: dict) -> None:
                out[i] = await call(client, tool, args)

            async with anyio.create_task_group() as tg:
                for i in range(4):
                    tg.start_soon(
                        one, i, "save_fact", {"content": f"Build step {i} runs `make target-{i}` before packaging."}
                    )
                tg.start_soon(
                    one, 10, "session_store", {"action": "save", "namespace": "n", "key": "k", "data": {"a": 1}}
                )
                tg.start_soon(one, 11, "load_session_context", {"format": "json"})
                tg.start_soon(one, 12, "recall", {"query": "how is the package built?"})
            assert len({out[i]["id"] for i in range(4)}) == 4
            listed = await call(client, "recall", {"query": "which make target runs before packaging?", "limit": 10})
            assert {out[i]["id"] for i in range(4)} <= {r["id"] for r in listed["results"]}

    run(go)


def test_the_long_lived_server_sees_other_writers_and_survives_a_reset(project_dir, script):
    """A fact saved by the command line while the server runs is recalled by the server; after the
    data folder is deleted under it, the next calls work on a fresh database."""
    import shutil

    async def go() -> None:
        async with serve(project_dir) as client:
            await call(
                client,
                "save_fact",
                {"content": "The staging database is Postgres 16 on port 5433.", "kind": "environment"},
            )
            cli = await anyio.to_thread.run_sync(
                lambda: script("save_fact", "Release notes live in docs/CHANGES.md.", "--kind", "convention")
            )
            assert cli.returncode == 0, cli.stderr
            found = await call(client, "recall", {"query": "where are the release notes kept?"})
            assert found["results"][0]["id"] == cli.json["id"]

            shutil.rmtree(project_dir / "contextware_data")
            saved = await call(client, "save_fact", {"content": "Feature flags live in flags.yaml."})
            found = await call(client, "recall", {"query": "where are feature flags configured?"})
            assert [r["id"] for r in found["results"]] == [saved["id"]]
            await call(client, "session_store", {"action": "save", "namespace": "n", "key": "k", "data": 1})

    run(go)


def test_a_home_directory_is_not_taken_for_a_project(tmp_path):
    home = tmp_path / "home"
    home.mkdir()

    async def go() -> None:
        async with serve(home, {"HOME": str(home)}) as client:
            assert await error(client, "recall", {"query": "anything"}) == "no_project"
        assert not (home / "contextware_data").exists()

    run(go)


def test_script_help_and_usage():
    out = subprocess.run([sys.executable, str(SERVER), "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "CONTEXTWARE_PROJECT_ROOT" in out.stdout
    out = subprocess.run([sys.executable, str(SERVER), "--port", "1"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and out.stdout == "" and "--port" in out.stderr
