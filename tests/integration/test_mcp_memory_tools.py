"""The MCP tools that look at and fix memory, and crawl, driven through a real server subprocess: a
person can correct a wrong memory from the agent they are working in."""

from __future__ import annotations

import textwrap

from tests.support.mcp_client import CONTRACT, call, error, run, serve


def test_list_get_update_history_delete_stats(project_dir):
    async def go() -> None:
        async with serve(project_dir) as client:
            old = await call(client, "save_fact", {"content": "Deploy with heroku.", "kind": "decision"})
            new = await call(
                client,
                "save_fact",
                {"content": "Deploy with fly deploy.", "kind": "decision", "supersedes": old["id"]},
            )
            episode = await call(
                client,
                "save_fact",
                {"type": "episode", "goal": "Ship", "result": "success", "content": "fly deploy worked first time."},
            )

            listed = await call(client, "list_memories", {})
            assert listed["total"] == 3 and {r["id"] for r in listed["records"]} == {
                old["id"],
                new["id"],
                episode["id"],
            }
            only = await call(client, "list_memories", {"collection": "episodes", "limit": 1})
            assert [r["id"] for r in only["records"]] == [episode["id"]]

            got = await call(client, "get_memory", {"id": new["id"]})
            assert got["record"]["text"] == "Deploy with fly deploy." and got["record"]["supersedes"] == old["id"]

            # History from either end of the chain: oldest first, the active one is current.
            for start in (old["id"], new["id"]):
                hist = await call(client, "memory_history", {"id": start})
                assert [r["id"] for r in hist["chain"]] == [old["id"], new["id"]]
                assert hist["current"] == new["id"] and hist["missing"] == []
            assert [r["status"] for r in hist["chain"]] == ["superseded", "active"]
            ep_hist = await call(client, "memory_history", {"id": episode["id"]})
            assert [r["id"] for r in ep_hist["chain"]] == [episode["id"]]

            fixed = await call(
                client, "update_memory", {"id": new["id"], "text": "Deploy with `fly deploy`.", "topics": ["ops"]}
            )
            assert fixed["updated"] == ["text", "topics"] and fixed["record"]["topics"] == ["ops"]
            found = await call(client, "recall", {"query": "how do we deploy?", "scope": "facts"})
            assert found["results"][0]["text"] == "Deploy with `fly deploy`." and "explanation" not in found
            why = await call(client, "recall", {"query": "how do we deploy?", "scope": "facts", "explain": True})
            assert why["results"] == found["results"] and why["explanation"]["verdict"].startswith("Answered")
            assert why["explanation"]["candidates"][0]["id"] == new["id"] == found["results"][0]["id"]
            assert await error(client, "update_memory", {"id": episode["id"], "text": "x"}) == "bad_option"
            assert await error(client, "update_memory", {"id": new["id"]}) == "nothing_to_update"
            assert await error(client, "update_memory", {"id": new["id"], "kind": "wish"}) == "bad_kind"

            gone = await call(client, "delete_memory", {"id": new["id"]})
            assert gone["deleted"] is True and gone["reactivated"] == old["id"]
            assert await error(client, "get_memory", {"id": new["id"]}) == "not_found"
            assert await error(client, "delete_memory", {"id": new["id"]}) == "not_found"
            assert await error(client, "memory_history", {"id": "fact-000000000000"}) == "not_found"
            assert (await call(client, "get_memory", {"id": old["id"]}))["record"]["status"] == "active"

            stats = await call(client, "memory_stats", {})
            assert stats["tables"]["facts"]["rows"] == 1 and stats["tables"]["episodes"]["rows"] == 1

    run(go)


def test_crawl_project_then_recall_code(project_dir):
    (project_dir / "billing").mkdir()
    (project_dir / "billing" / "invoices.py").write_text(
        textwrap.dedent('''
        """Invoice generation: totals, VAT and PDF rendering for customer invoices."""


        def compute_vat(amount: float, rate: float) -> float:
            return amount * rate
        ''')
    )
    (project_dir / "README.md").write_text("# Shop\n\nAn online shop.\n")

    async def go() -> None:
        async with serve(project_dir) as client:
            report = await call(client, "crawl_project", {"summarizer": "local"})
            assert report["indexed"] == 2 and report["failed"] == 0
            again = await call(client, "crawl_project", {"summarizer": "local", "paths": ["billing"]})
            assert again["indexed"] == 0 and again["unchanged"] == 1
            found = await call(client, "recall", {"query": "where is VAT computed?", "scope": "code"})
            assert found["results"][0]["file_path"] == "billing/invoices.py"
            assert await error(client, "crawl_project", {"summarizer": "smart"}) == "bad_summarizer"

    run(go)


def test_contextware_mcp_serves_the_same_tools(project_dir):
    """`contextware mcp` is the same server as scripts/mcp_server.py."""
    import os
    import sys

    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from contextware.cli import main; main(['mcp'])"],
        cwd=str(project_dir),
        env=dict(os.environ),
    )

    async def go() -> None:
        async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
            assert [t.name for t in (await client.list_tools()).tools] == list(CONTRACT)
            saved = await call(client, "save_fact", {"content": "The docs are built with mkdocs."})
            assert (await call(client, "get_memory", {"id": saved["id"]}))["record"]["text"].endswith("mkdocs.")

    run(go)


def test_a_memory_whose_file_changed_is_listed_stale_and_confirmed(project_dir):
    """memory.code_links through the MCP tools: crawl, save, edit, crawl, list stale, confirm."""
    (project_dir / "retry.py").write_text("def backoff_delay(attempt):\n    return 2**attempt\n")

    async def go() -> None:
        async with serve(project_dir) as client:
            await call(client, "crawl_project", {"summarizer": "local"})
            fact = await call(client, "save_fact", {"content": "Waits come from `backoff_delay` in retry.py."})
            assert (await call(client, "list_memories", {"stale": True}))["total"] == 0
            (project_dir / "retry.py").write_text("def backoff_delay(attempt):\n    return 3**attempt\n")
            await call(client, "crawl_project", {"summarizer": "local"})
            stale = await call(client, "list_memories", {"stale": True})
            assert [r["id"] for r in stale["records"]] == [fact["id"]]
            assert stale["records"][0]["may_be_stale"].startswith("retry.py changed on ")
            found = await call(client, "recall", {"query": "where do retry waits come from?"})
            assert any(r["id"] == fact["id"] and r.get("may_be_stale") for r in found["results"])
            confirmed = await call(client, "confirm_memory", {"id": fact["id"]})
            assert confirmed["confirmed"] is True and confirmed["code_links"] == ["retry.py"]
            assert (await call(client, "list_memories", {"stale": True}))["total"] == 0
            assert await error(client, "confirm_memory", {"id": "fact-000000000000"}) == "not_found"

    run(go)
