"""A small polyglot source tree to index, and the rows the code index holds for a project."""

from __future__ import annotations

from pathlib import Path

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
    table = Project.open(project.root).db.open_table("code_index")
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


def indexed(root: Path) -> dict[str, list[str]]:
    table = Project.open(root).db.open_table("code_index")
    return {r["id"]: r["symbols"] for r in table.search().select(["id", "symbols"]).limit(None).to_list()}
