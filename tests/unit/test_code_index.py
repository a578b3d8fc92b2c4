"""The code index in-process: crawl, index_file, staleness, exact mode (real LanceDB, the real
embedding model).  The scripts as processes: tests/integration/test_code_index_processes.py."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from contextware.codeindex.indexer import crawl
from contextware.memory.recall import recall
from contextware.settings import Settings
from contextware.storage.project import Project

TREE = {
    "src/models.py": '"""Data models: the Invoice and Customer records stored in the database."""\n\n'
    'class Invoice:\n    """An invoice with line items and a due date."""\n\n'
    "    def total(self):\n        return sum(self.items)\n\n\nclass Customer:\n    pass\n",
    "src/http_client.py": '"""Retrying HTTP client for the payment provider."""\n\n'
    'def fetch_with_retry(url, attempts=3):\n    """GET a URL, backing off exponentially on 5xx."""\n'
    "    for attempt in range(attempts):\n        pass\n",
    "web/app.js": "// Express server: routes for the checkout page.\n"
    "export function startServer(port) {\n  return listen(port);\n}\n"
    "export class CheckoutController {\n  submit(order) { return order; }\n}\n",
    "cmd/main.go": "// Package main is the command-line entry point that migrates the database schema.\n"
    "package main\n\nfunc main() {\n}\n\nfunc migrateSchema(dsn string) error {\n\treturn nil\n}\n",
    "crates/parser/src/lib.rs": "//! Tokenizer and parser for the query language.\n"
    "pub struct Lexer {}\n\nimpl Lexer {\n    pub fn next_token(&mut self) {}\n}\n",
    "scripts/deploy.sh": "#!/bin/bash\n# Deploy the app to production with a blue-green switch.\n"
    "deploy_green() {\n  echo deploying\n}\n",
    "README.md": "# Shop\n\nAn online shop with invoices and a checkout.\n",
}


def make_tree(root: Path, files: dict[str, str] = TREE) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def rows(project: Project) -> dict[str, dict]:
    table = Project.open(project.root, Settings.from_env(os.environ)).db.open_table("code_index")
    if table is None:
        return {}
    out = {}
    for row in (
        table.search()
        .select(["id", "file_path", "summary", "symbols", "summarizer", "mtime", "size", "content_hash", "language"])
        .limit(None)
        .to_list()
    ):
        assert row["id"] not in out, f"duplicate row for {row['id']}"
        out[row["id"]] = row
    return out


def code(project: Project, query: str, **kw) -> list[dict]:
    return recall(Project.open(project.root, Settings.from_env(os.environ)), query, scope="code", **kw)["results"]


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
    out = crawl(Project.open(project.root, Settings.from_env(os.environ)), summarizer="local")
    assert out["indexed_files"] == ["a.py"]
    reasons = {s["path"]: s["reason"] for s in out["skipped_files"]}
    assert reasons == {"big.py": "too_large", "blob.dat": "binary"}
    assert set(rows(project)) == {"a.py"}

    # a file that grows past the limit leaves the index
    (project.root / "a.py").write_text("z = 3\n" * 400)
    out = crawl(Project.open(project.root, Settings.from_env(os.environ)), summarizer="local")
    assert out["removed_files"] == ["a.py"] and rows(project) == {}


def test_crawl_of_given_paths_only_touches_them(project: Project):
    make_tree(project.root)
    crawl(project, summarizer="local")
    (project.root / "src/http_client.py").unlink()
    (project.root / "web/app.js").unlink()
    out = crawl(project, [project.root / "src"], summarizer="local")
    assert out["scanned"] == 1 and out["removed_files"] == ["src/http_client.py"]
    assert "web/app.js" in rows(project)  # outside the given folder: left for a full crawl


def test_stale_flag_refresh_and_exact_mode(project: Project):
    make_tree(project.root)
    crawl(project, summarizer="local")
    client = project.root / "src/http_client.py"
    client.write_text(client.read_text() + "\ndef circuit_breaker():\n    pass\n")
    hit = code(project, "retry HTTP requests with backoff")[0]
    assert hit["file_path"] == "src/http_client.py" and hit["stale"] is True
    assert hit["note"] == "[STALE] File changed since it was indexed; read it directly."

    fresh = recall(
        Project.open(project.root, Settings.from_env(os.environ)),
        "retry HTTP requests with backoff",
        scope="code",
        refresh_stale=True,
    )
    assert fresh["refreshed"] == ["src/http_client.py"]
    top = fresh["results"][0]
    assert top["stale"] is False and "circuit_breaker" in top["symbols"]

    exact = recall(
        Project.open(project.root, Settings.from_env(os.environ)),
        "retry HTTP requests with backoff",
        scope="code",
        mode="exact",
        limit=2,
    )["results"]
    assert exact[0]["content"] == client.read_text()

    (project.root / "src/models.py").unlink()
    gone = code(project, "invoice data models")[0]
    assert gone["file_path"] == "src/models.py" and gone["stale"] is True and "deleted" in gone["note"]


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
        for h in recall(Project.open(project.root, Settings.from_env(os.environ)), query, scope="code", mode="exact")[
            "results"
        ]
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
        for h in recall(Project.open(project.root, Settings.from_env(os.environ)), query, scope="code", mode="exact")[
            "results"
        ]
        if h["file_path"] == "src/http_client.py"
    )
    assert hit["content"] == original and hit["stale"] is False


def test_exact_mode_gives_line_ranges_of_a_file_too_large_for_the_budget(project: Project):
    filler = "".join(f"def helper_{i}(value):\n    return value + {i}\n\n" for i in range(300))
    target = 'def reconcile_ledger(entries):\n    """Match bank entries to ledger lines."""\n    return entries\n'
    make_tree(project.root, {**TREE, "big_module.py": '"""Accounting helpers."""\n' + filler + target + filler})
    crawl(project, summarizer="local")
    hit = recall(
        Project.open(project.root, Settings.from_env(os.environ)),
        "reconcile bank entries with the ledger",
        scope="code",
        mode="exact",
        max_chars=1500,
    )["results"][0]
    assert "content" not in hit
    assert hit["excerpts"] and sum(len(e["text"]) for e in hit["excerpts"]) <= 1500
    assert any("def reconcile_ledger" in e["text"] for e in hit["excerpts"])
    assert "Read the rest of the file yourself" in hit["content_note"]
    lines = (project.root / "big_module.py").read_text().splitlines()
    for e in hit["excerpts"]:
        a, b = map(int, e["lines"].split("-"))
        assert e["text"] == "\n".join(lines[a - 1 : b])


def test_all_scope_mixes_code_and_memory(project: Project):
    from contextware.memory.records import save_fact

    make_tree(project.root)
    crawl(project, summarizer="local")
    save_fact(project, "Invoices are immutable once sent; corrections are credit notes.", kind="decision")
    hits = recall(
        Project.open(project.root, Settings.from_env(os.environ)),
        "can we edit an invoice after sending it?",
        scope="all",
    )["results"]
    assert hits[0]["collection"] == "facts"
    assert any(
        h["collection"] == "code_index"
        for h in recall(
            Project.open(project.root, Settings.from_env(os.environ)), "where is the invoice class", scope="all"
        )["results"]
    )


def test_off_topic_questions_bring_no_files_into_mixed_recall(project: Project):
    make_tree(project.root)
    crawl(project, summarizer="local")
    fresh = Project.open(project.root, Settings.from_env(os.environ))
    for question in ("what is the capital of Australia?", "give me a recipe for pancakes"):
        assert recall(fresh, question, scope="all")["results"] == []
    # asked for code explicitly, the likeliest files are still ranked
    assert recall(fresh, "give me a recipe for pancakes", scope="code")["results"]


def test_a_symlink_given_to_crawl_never_removes_its_targets_rows(project: Project):
    make_tree(project.root)
    crawl(project, summarizer="local")
    (project.root / "linkdir").symlink_to(project.root / "src", target_is_directory=True)
    (project.root / "src" / "alias.py").symlink_to(project.root / "src" / "models.py")
    crawl(project, [project.root / "linkdir"], summarizer="local")
    crawl(project, [project.root / "src" / "alias.py"], summarizer="local")
    assert {"src/models.py", "src/http_client.py"} <= set(rows(project))
