"""The code index in-process: crawl, index_file, staleness, exact mode (real LanceDB, the real
embedding model).  The scripts as processes: tests/integration/test_code_index_processes.py."""

from __future__ import annotations

import json
import os
import time

import pytest

from contextware.codeindex.indexer import crawl
from contextware.memory.recall import ask
from contextware.storage.project import Project
from tests.support.code_index import TREE, make_tree, rows


def code(project: Project, query: str, **kw) -> list[dict]:
    return ask(Project.open(project.root), query, scope="code", **kw)["results"]


def test_crawl_indexes_every_language_and_recall_finds_files(project: Project):
    make_tree(project.root)
    out = crawl(project, summarizer="local")
    assert out["scanned"] == len(TREE) and out["indexed"] == len(TREE) and out["failed"] == 0
    assert out["summarizers"] == {"local": len(TREE)}
    indexed = rows(project)
    assert set(indexed) == set(TREE)
    assert "Invoice.total" in indexed["src/models.py"]["symbols"]
    assert "migrateSchema" in indexed["cmd/main.go"]["symbols"]
    assert indexed["crates/parser/src/lib.rs"]["language"] == "rust"
    assert all(r["summarizer"] == "local" for r in indexed.values())

    hits = code(project, "where are the data models defined?")
    assert hits[0]["file_path"] == "src/models.py"
    assert hits[0]["stale"] is False and "Invoice" in hits[0]["symbols"]
    assert set(hits[0]) >= {"collection", "id", "score", "file_path", "summary", "symbols", "stale"}
    assert (
        code(project, "how do we retry failed requests to the payment provider")[0]["file_path"] == "src/http_client.py"
    )
    assert code(project, "blue green production rollout script")[0]["file_path"] == "scripts/deploy.sh"


@pytest.mark.slow
def test_incremental_crawl_touch_edit_delete_and_ignore(project: Project):
    make_tree(project.root)
    crawl(project, summarizer="local")
    again = crawl(project, summarizer="local")
    assert again["indexed"] == 0 and again["unchanged"] == len(TREE) and again["removed"] == 0

    models = project.root / "src/models.py"
    before = rows(project)["src/models.py"]
    os.utime(models, (time.time() + 5, time.time() + 5))  # touched, same bytes: stat refreshed only
    touched = crawl(project, summarizer="local")
    assert touched["indexed"] == 0 and touched["unchanged"] == len(TREE)
    after = rows(project)["src/models.py"]
    assert after["mtime"] == models.stat().st_mtime and after["content_hash"] == before["content_hash"]
    assert code(project, "data models")[0]["stale"] is False

    models.write_text(models.read_text() + "\n\nclass Refund:\n    pass\n")
    (project.root / "web/app.js").unlink()
    (project.root / ".contextwareignore").write_text("scripts/\n")
    changed = crawl(project, summarizer="local")
    assert "src/models.py" in changed["indexed_files"]
    assert sorted(changed["removed_files"]) == ["scripts/deploy.sh", "web/app.js"]
    indexed = rows(project)
    assert "Refund" in indexed["src/models.py"]["symbols"]
    assert "web/app.js" not in indexed and "scripts/deploy.sh" not in indexed

    forced = crawl(project, summarizer="local", force=True)
    assert forced["indexed"] == len(indexed) and len(rows(project)) == len(indexed)


def test_skips_binary_large_and_ignored_files_with_reasons(project: Project):
    make_tree(
        project.root,
        {
            "a.py": "x = 1\n",
            "big.py": "# big\n" + "y = 2\n" * 400,
            "node_modules/lib/index.js": "module.exports = 1;\n",
            "uv.lock": "version = 1\n",
        },
    )
    (project.root / "blob.dat").write_bytes(b"\x00\x01\x02binary")
    project.ensure_data_dir()
    (project.data_dir / "config.json").write_text(json.dumps({"max_file_bytes": 1000}))
    out = crawl(Project.open(project.root), summarizer="local")
    assert out["indexed_files"] == ["a.py"]
    reasons = {s["path"]: s["reason"] for s in out["skipped_files"]}
    assert reasons == {"big.py": "too_large", "blob.dat": "binary"}
    assert set(rows(project)) == {"a.py"}

    # a file that grows past the limit leaves the index
    (project.root / "a.py").write_text("z = 3\n" * 400)
    out = crawl(Project.open(project.root), summarizer="local")
    assert out["removed_files"] == ["a.py"] and rows(project) == {}


@pytest.mark.slow
def test_crawl_of_given_paths_only_touches_them(project: Project):
    make_tree(project.root)
    crawl(project, summarizer="local")
    (project.root / "src/http_client.py").unlink()
    (project.root / "web/app.js").unlink()
    out = crawl(project, [project.root / "src"], summarizer="local")
    assert out["scanned"] == 1 and out["removed_files"] == ["src/http_client.py"]
    assert "web/app.js" in rows(project)  # outside the given folder: left for a full crawl


@pytest.mark.slow
def test_stale_flag_refresh_and_exact_mode(project: Project):
    make_tree(project.root)
    crawl(project, summarizer="local")
    client = project.root / "src/http_client.py"
    client.write_text(client.read_text() + "\ndef circuit_breaker():\n    pass\n")
    hit = code(project, "retry HTTP requests with backoff")[0]
    assert hit["file_path"] == "src/http_client.py" and hit["stale"] is True
    assert hit["note"] == "[STALE] File changed since it was indexed; read it directly."

    fresh = ask(Project.open(project.root), "retry HTTP requests with backoff", scope="code", refresh_stale=True)
    assert fresh["refreshed"] == ["src/http_client.py"]
    top = fresh["results"][0]
    assert top["stale"] is False and "circuit_breaker" in top["symbols"]

    exact = ask(Project.open(project.root), "retry HTTP requests with backoff", scope="code", mode="exact", limit=2)[
        "results"
    ]
    assert exact[0]["content"] == client.read_text()

    (project.root / "src/models.py").unlink()
    gone = code(project, "invoice data models")[0]
    assert gone["file_path"] == "src/models.py" and gone["stale"] is True and "deleted" in gone["note"]


@pytest.mark.slow
def test_exact_mode_compares_the_content_hash_not_only_size_and_mtime(project: Project):
    """An edit that keeps the size and the modification time (a same-length change, mtime restored)
    passes the stat check; exact mode must not show the new bytes as the indexed file."""
    make_tree(project.root)
    crawl(project, summarizer="local")
    client = project.root / "src/http_client.py"
    st = client.stat()
    original = client.read_text()
    client.write_text(original.replace("backing off", "BACKING OFF"))  # same length
    os.utime(client, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert client.stat().st_size == st.st_size and client.stat().st_mtime == st.st_mtime
    query = "retry HTTP requests with backoff"
    hit = next(
        h
        for h in ask(Project.open(project.root), query, scope="code", mode="exact")["results"]
        if h["file_path"] == "src/http_client.py"
    )
    assert "content" not in hit and "excerpts" not in hit and "BACKING OFF" not in json.dumps(hit)
    assert hit["stale"] is True and hit["note"].startswith("[STALE]")
    assert "changed since it was indexed" in hit["content_note"] and "_content_hash" not in hit
    summary = next(h for h in code(project, query) if h["file_path"] == "src/http_client.py")
    assert "_content_hash" not in summary  # summary mode neither compares nor leaks it

    client.write_text(original)  # the same bytes again (a checkout that restores them): shown
    os.utime(client, ns=(st.st_atime_ns, st.st_mtime_ns))
    hit = next(
        h
        for h in ask(Project.open(project.root), query, scope="code", mode="exact")["results"]
        if h["file_path"] == "src/http_client.py"
    )
    assert hit["content"] == original and hit["stale"] is False


@pytest.mark.slow
def test_exact_mode_gives_line_ranges_of_a_file_too_large_for_the_budget(project: Project):
    filler = "".join(f"def helper_{i}(value):\n    return value + {i}\n\n" for i in range(300))
    target = 'def reconcile_ledger(entries):\n    """Match bank entries to ledger lines."""\n    return entries\n'
    make_tree(project.root, {**TREE, "big_module.py": '"""Accounting helpers."""\n' + filler + target + filler})
    crawl(project, summarizer="local")
    hit = ask(
        Project.open(project.root), "reconcile bank entries with the ledger", scope="code", mode="exact", max_chars=1500
    )["results"][0]
    assert "content" not in hit
    assert hit["excerpts"] and sum(len(e["text"]) for e in hit["excerpts"]) <= 1500
    assert any("def reconcile_ledger" in e["text"] for e in hit["excerpts"])
    assert "Read the rest of the file yourself" in hit["content_note"]
    lines = (project.root / "big_module.py").read_text().splitlines()
    for e in hit["excerpts"]:
        a, b = map(int, e["lines"].split("-"))
        assert e["text"] == "\n".join(lines[a - 1 : b])


@pytest.mark.slow
def test_all_scope_mixes_code_and_memory(project: Project):
    from contextware.memory.records import save_fact

    make_tree(project.root)
    crawl(project, summarizer="local")
    save_fact(project, "Invoices are immutable once sent; corrections are credit notes.", kind="decision")
    hits = ask(Project.open(project.root), "can we edit an invoice after sending it?", scope="all")["results"]
    assert hits[0]["collection"] == "facts"
    assert any(
        h["collection"] == "code_index"
        for h in ask(Project.open(project.root), "where is the invoice class", scope="all")["results"]
    )


@pytest.mark.slow
def test_off_topic_questions_bring_no_files_into_mixed_recall(project: Project):
    make_tree(project.root)
    crawl(project, summarizer="local")
    fresh = Project.open(project.root)
    for question in ("what is the capital of Australia?", "give me a recipe for pancakes"):
        assert ask(fresh, question, scope="all")["results"] == []
    # asked for code explicitly, the likeliest files are still ranked
    assert ask(fresh, "give me a recipe for pancakes", scope="code")["results"]


@pytest.mark.slow
def test_a_symlink_given_to_crawl_never_removes_its_targets_rows(project: Project):
    make_tree(project.root)
    crawl(project, summarizer="local")
    (project.root / "linkdir").symlink_to(project.root / "src", target_is_directory=True)
    (project.root / "src" / "alias.py").symlink_to(project.root / "src" / "models.py")
    crawl(project, [project.root / "linkdir"], summarizer="local")
    crawl(project, [project.root / "src" / "alias.py"], summarizer="local")
    assert {"src/models.py", "src/http_client.py"} <= set(rows(project))
