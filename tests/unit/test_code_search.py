"""Code search over content: definition chunks written, replaced and removed with their file,
identifiers split for the full-text index, hits pointing at the matching definition's lines, and
exact mode showing that definition; real LanceDB and the real embedding model."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextware.codeindex.chunks import file_chunks
from contextware.codeindex.indexer import crawl, index_files
from contextware.memory.recall import ask
from contextware.storage.embedded_text import split_identifiers
from contextware.storage.project import Project
from contextware.storage.schemas import CHUNKS_TABLE, CODE_TABLE, FTS_COLUMN
from tests.support.code_index import make_tree as write_tree

# The summary of billing.py says nothing about currency rounding: only a function body does.
BILLING = '''"""Billing helpers for the shop."""


def format_receipt(order):
    """Render a receipt for an order."""
    lines = [f"{item.name}: {item.price}" for item in order.items]
    return "\\n".join(lines)


def settle_amount(cents, rate):
    value = cents * rate
    # banker's rounding to whole cents, so that halves go to the even neighbour
    remainder = value % 1
    if remainder == 0.5:
        return int(value) if int(value) % 2 == 0 else int(value) + 1
    return round(value)


class LedgerWriter:
    """Appends entries to the ledger file."""

    def append(self, entry):
        self.entries.append(entry)
        return len(self.entries)
'''
TREE = {
    "src/billing.py": BILLING,
    "src/shipping.py": '"""Shipping: carriers and parcel labels."""\n\n\ndef print_label(parcel):\n'
    '    """Print the carrier label of a parcel."""\n    return parcel.carrier.label(parcel)\n',
    "web/cart.js": "// Shopping cart widget.\nexport function computeInvoiceTotal(lines) {\n"
    "  let sum = 0;\n  for (const l of lines) sum += l.qty * l.unitPrice;\n  return sum;\n}\n"
    "export function emptyCart(cart) {\n  cart.lines = [];\n  return cart;\n}\n",
    "cmd/main.go": "// Package main starts the shop server.\npackage main\n\nfunc main() {\n\tserve()\n\treturn\n}\n",
}


def make_tree(root: Path, files: dict[str, str] = TREE) -> None:
    write_tree(root, files)


def chunks(project: Project) -> dict[str, dict]:
    table = Project.open(project.root).db.open_table(CHUNKS_TABLE)
    if table is None:
        return {}
    out = {}
    for row in (
        table.search().select(["id", "file_path", "name", "start_line", "end_line", "vector"]).limit(None).to_list()
    ):
        assert row["id"] not in out, f"duplicate chunk {row['id']}"
        out[row["id"]] = row
    return out


def names(project: Project, path: str) -> set[str]:
    return {r["name"] for r in chunks(project).values() if r["file_path"] == path}


def test_identifiers_are_split_in_place():
    assert (
        split_identifiers("x = parseHTTPResponse(fooBar)")
        == "x = parseHTTPResponse parse HTTP Response(fooBar foo Bar)"
    )
    assert split_identifiers("snake_case and kebab-case stay; plain words too") == (
        "snake_case and kebab-case stay; plain words too"
    )


def test_file_chunks_have_line_ranges_and_short_texts():
    found = {c.name: c for c in file_chunks("src/billing.py", BILLING, "python")}
    assert set(found) == {"format_receipt", "settle_amount", "LedgerWriter"}  # the 3 largest of 4
    lines = BILLING.split("\n")
    settle = found["settle_amount"]
    assert (
        lines[settle.start - 1].startswith("def settle_amount")
        and lines[settle.end - 1].strip() == "return round(value)"
    )
    assert settle.embedding_text.startswith("settle amount (def).") and len(settle.embedding_text) <= 120
    assert "rounding" in settle.search_text
    assert file_chunks("notes.txt", "just text", None) == []


def test_chunks_skip_what_adds_nothing():
    """A file that is one definition gets no chunk (its row is that definition); beyond
    MAX_CHUNKS only the largest definitions get one; identical chunk texts are embedded once."""
    from contextware.codeindex.chunks import MAX_CHUNKS
    from contextware.codeindex.local_summary import summarize_local, summarize_parsed

    one = '"""Shipping."""\n\n\ndef print_label(parcel):\n    """Print it."""\n    return parcel\n'
    assert file_chunks("src/shipping.py", one, "python") == []
    many = "".join(f"def f{i}(x):\n" + "    x += 1\n" * i + "    return x\n\n\n" for i in range(1, 9))
    kept = file_chunks("src/many.py", many, "python")
    assert [c.name for c in kept] == [f"f{i}" for i in range(9 - MAX_CHUNKS, 9)]  # the largest, in file order
    twins = "if A:\n    def go(x):\n        x += 1\n        return x\nelse:\n    def go(x):\n        x += 1\n        return x\n"
    twins += "\n\ndef other(y):\n    y += 2\n    return y\n"
    assert sorted(c.name for c in file_chunks("src/twins.py", twins, "python")) == ["go", "other"]
    # the local summariser's own parse gives the same chunks (crawl parses each file once)
    summary, parsed = summarize_parsed("src/billing.py", BILLING)
    assert summary == summarize_local("src/billing.py", BILLING)
    assert parsed is not None and file_chunks("src/billing.py", BILLING, "python", parsed) == file_chunks(
        "src/billing.py", BILLING, "python"
    )


@pytest.mark.slow
def test_chunks_are_written_replaced_and_removed_with_their_file(project: Project):
    make_tree(project.root)
    crawl(project, summarizer="local")
    stored = chunks(project)
    assert names(project, "src/billing.py") == {
        "format_receipt",
        "settle_amount",
        "LedgerWriter",
    }  # the MAX_CHUNKS (3) largest: the 3-line LedgerWriter.append is left to the file's row
    assert names(project, "web/cart.js") == {"computeInvoiceTotal", "emptyCart"}
    assert all(r["vector"] is not None for r in stored.values())
    assert "src/billing.py#10-16" in stored  # keyed by path and 1-based line range

    # index_file: the changed file's chunks are replaced, the others' untouched
    billing = project.root / "src/billing.py"
    billing.write_text(BILLING.replace("settle_amount", "round_to_cents"), encoding="utf-8")
    index_files(project, [billing], summarizer="local")
    assert names(project, "src/billing.py") == {
        "format_receipt",
        "round_to_cents",
        "LedgerWriter",
    }  # the MAX_CHUNKS (3) largest: the 3-line LedgerWriter.append is left to the file's row
    assert names(project, "web/cart.js") == {"computeInvoiceTotal", "emptyCart"}

    # crawl after a change: replaced again, without duplicates
    billing.write_text(BILLING, encoding="utf-8")
    crawl(project, summarizer="local")
    assert names(project, "src/billing.py") == {
        "format_receipt",
        "settle_amount",
        "LedgerWriter",
    }  # the MAX_CHUNKS (3) largest: the 3-line LedgerWriter.append is left to the file's row

    # a deleted file: its chunks go with its row (crawl, and index_file of the missing path)
    billing.unlink()
    index_files(project, [billing], summarizer="local")
    assert names(project, "src/billing.py") == set()
    assert {r["file_path"] for r in chunks(project).values()} == {"web/cart.js"}
    (project.root / "web/cart.js").unlink()
    out = crawl(project, summarizer="local")
    assert out["removed_files"] == ["web/cart.js"] and chunks(project) == {}


@pytest.mark.slow
def test_a_question_answered_in_a_function_body_finds_the_file_and_its_lines(project: Project):
    make_tree(project.root)
    crawl(project, summarizer="local")
    row = Project.open(project.root).db.open_table(CODE_TABLE).search().where("id = 'src/billing.py'").to_list()[0]
    assert "rounding" not in row["summary"]  # only the body says it
    hit = ask(Project.open(project.root), "where do we round halves to the even cent?", scope="code")["results"][0]
    assert hit["file_path"] == "src/billing.py"
    assert hit["lines"] == [10, 16] and hit["symbol"] == "settle_amount"


@pytest.mark.slow
def test_exact_mode_shows_the_matched_definition_of_a_file_over_the_budget(project: Project):
    filler = "".join(f"def helper_{i}(value):\n    return value + {i}\n\n" for i in range(300))
    make_tree(project.root, {**TREE, "src/billing.py": filler + BILLING + filler})
    crawl(project, summarizer="local")
    hit = ask(
        Project.open(project.root),
        "where do we round halves to the even cent?",
        scope="code",
        mode="exact",
        max_chars=600,
    )["results"][0]
    assert hit["file_path"] == "src/billing.py" and "content" not in hit
    start, end = hit["lines"]
    lines = (project.root / "src/billing.py").read_text().splitlines()
    assert lines[start - 1].startswith("def settle_amount")
    shown = [e for e in hit["excerpts"] if e["lines"] == f"{start}-{end}"]
    assert shown and "banker's rounding" in shown[0]["text"], hit["excerpts"]
    assert shown[0]["text"] == "\n".join(lines[start - 1 : end])
    assert sum(len(e["text"]) for e in hit["excerpts"]) <= 600


@pytest.mark.slow
def test_the_full_text_index_finds_a_split_identifier(project: Project):
    # "unitPrice" appears only inside a function body, never as a symbol
    make_tree(project.root)
    crawl(project, summarizer="local")
    db = Project.open(project.root).db
    for name, column in ((CODE_TABLE, "file_path"), (CHUNKS_TABLE, "file_path")):
        table = db.open_table(name)
        found = table.search("unit price", query_type="fts", fts_columns=FTS_COLUMN).select([column]).to_list()
        assert [r[column] for r in found][:1] == ["web/cart.js"], name


def test_a_gemini_summary_adds_the_questions_a_file_answers(project: Project):
    """The questions of a Gemini reply entry are kept and searched (lexical and vector fields)."""
    from contextware.codeindex.gemini_summary import SourceFile, validate_entry
    from contextware.codeindex.indexer import Report, _Writer
    from contextware.codeindex.source_text import Candidate
    from contextware.codeindex.summarizing import Work as _Work

    entry = {"summary": "Shipping labels.", "symbols": [], "questions": ["where are parcels stickered?", 3, " "]}
    summary = validate_entry(SourceFile("src/shipping.py", TREE["src/shipping.py"], "python"), entry)
    assert summary.questions == ["where are parcels stickered?"]
    assert validate_entry(SourceFile("a.py", "x", "python"), {"summary": "S.", "symbols": []}).questions == []

    make_tree(project.root)
    path = project.root / "src/shipping.py"
    writer = _Writer(project, Report())
    st = path.stat()
    writer.add(
        _Work(Candidate("src/shipping.py", path, st.st_mtime, st.st_size), path.read_text(), "h"), summary, "gemini"
    )
    writer.flush()
    table = Project.open(project.root).db.open_table(CODE_TABLE)
    found = table.search("stickered", query_type="fts", fts_columns=FTS_COLUMN).select(["id", "questions"]).to_list()
    assert [(r["id"], r["questions"]) for r in found] == [("src/shipping.py", ["where are parcels stickered?"])]


@pytest.mark.slow
def test_an_index_without_chunks_gets_them_on_the_next_crawl(project: Project):
    """An index written before chunks existed (no code_chunks table) is re-indexed once."""
    make_tree(project.root)
    crawl(project, summarizer="local")
    Project.open(project.root).db.conn.drop_table(CHUNKS_TABLE)
    out = crawl(Project.open(project.root), summarizer="local")
    assert out["indexed"] == len(TREE)
    assert names(project, "web/cart.js") == {"computeInvoiceTotal", "emptyCart"}
    assert crawl(Project.open(project.root), summarizer="local")["indexed"] == 0  # once only


@pytest.mark.slow
def test_a_damaged_file_or_definition_row_is_damaged_data_not_an_answer(project: Project):
    """Code search reads its own rows (files and definitions): both are checked like every table's."""
    import pytest

    from contextware.core.errors import DamagedDataError

    write_tree(project.root, {"src/billing.py": BILLING})
    crawl(project, summarizer="local")
    question = "where do we round amounts to whole cents?"
    assert ask(Project.open(project.root), question, scope="code")["results"]
    for table, column in ((CHUNKS_TABLE, "text"), (CODE_TABLE, "summary")):
        db = Project.open(project.root).db
        db.open_table(table).update(where="file_path = 'src/billing.py'", values={column: "tampered"})
        with pytest.raises(DamagedDataError):
            ask(Project.open(project.root), question, scope="code")
        crawl(Project.open(project.root), summarizer="local", force=True)  # a re-index writes them anew


def test_name_match_weighs_rare_query_words_found_in_paths_and_definition_names():
    from contextware.codeindex.search import name_match

    rows = [
        {"id": "rich/_spinners.py", "file_path": "rich/_spinners.py", "symbols": ["SPINNERS"]},
        {"id": "rich/console.py", "file_path": "rich/console.py", "symbols": ["Console", "Console.print"]},
        {"id": "rich/pager.py", "file_path": "rich/pager.py", "symbols": ["SystemPager.show"]},
    ]
    scores = name_match("which file holds the frames of the spinners?", rows)
    assert scores["rich/_spinners.py"] > 0 and scores["rich/console.py"] == scores["rich/pager.py"] == 0
    both = name_match("where does the console show a pager?", rows)
    assert both["rich/pager.py"] > 0 and both["rich/console.py"] > 0
    assert name_match("the and of", rows) == {}  # no content word: no signal


def test_test_files_are_recognised_and_ranked_below_source_unless_asked():
    from contextware.codeindex.search import fuse_code, is_test_path

    for path in ("tests/test_http.py", "context_test.go", "src/app.test.ts", "lib/__tests__/x.js", "test_util.py"):
        assert is_test_path(path), path
    for path in ("src/testing_tools_guide.md", "contest.py", "lib/attestation.go", "latest/main.rs"):
        assert not is_test_path(path), path
    same = {"file_sim": 0.5, "chunk_sim": 0.5, "file_bm25": 3.0, "chunk_bm25": 0.0, "name": 0.2}
    assert fuse_code({**same, "test": 1.0}) < fuse_code({**same, "test": 0.0})


@pytest.mark.slow
def test_a_question_about_tests_may_rank_the_test_file_first(project: Project):
    tree = {
        **TREE,
        "tests/test_billing.py": "from src.billing import settle_amount\n\n\ndef test_settle_amount_rounds_halves():\n"
        "    assert settle_amount(5, 0.5) == 2\n    assert settle_amount(7, 0.5) == 4\n",
    }
    make_tree(project.root, tree)
    crawl(project, summarizer="local")
    top = ask(Project.open(project.root), "where do we round halves to the even cent?", scope="code")
    assert top["results"][0]["file_path"] == "src/billing.py"
    asked = ask(Project.open(project.root), "which test checks that settle amount rounds halves?", scope="code")
    assert asked["results"][0]["file_path"] == "tests/test_billing.py"


def test_a_batch_embeds_each_distinct_text_once_shortest_first(project: Project):
    """Files' and definitions' texts go to the real model together: duplicates once, by length."""
    from contextware.codeindex.indexer import embed_rows

    model = project.embedder
    seen: list[list[str]] = []

    class Counting:  # the real model, with its calls recorded
        model_id, dim = model.model_id, model.dim

        def embed(self, texts):
            seen.append(list(texts))
            return model.embed(texts)

    texts = ["a much longer file summary text", "go (func).", "short", "go (func)."]
    rows: list[dict] = [{} for _ in texts]
    embed_rows(Counting(), rows, texts)
    assert seen == [["short", "go (func).", "a much longer file summary text"]]
    assert rows[1]["vector"] == rows[3]["vector"] and rows[0]["vector"] != rows[2]["vector"]
    assert rows[2]["vector"] == model.embed(["short"])[0].tolist()
