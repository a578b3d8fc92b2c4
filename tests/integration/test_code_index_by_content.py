"""The code index keyed by content, with real git: after main and a feature branch that differs in
some files were each crawled once, switching back and forth summarises nothing again (the summaries
kept per content hash come back; only vectors are computed), and the index matches the checkout."""

from __future__ import annotations

from pathlib import Path

from contextware.codeindex.indexer import crawl
from contextware.storage.project import Project
from tests.support.branch_git import git, new_repo

FILES = 40
CHANGED = 6


def _module(i: int, flavour: str) -> str:
    return (
        f'"""Module {i} ({flavour}): helpers for the {flavour} side of part {i}."""\n\n\n'
        f"def handle_{flavour}_{i}(value):\n"
        f'    """Handle one {flavour} value for part {i}."""\n'
        f"    return value * {i + 1}\n"
    )


def test_switching_branches_resummarises_nothing_the_second_time(tmp_path: Path) -> None:
    root = new_repo(tmp_path / "repo")
    (root / "pkg").mkdir()
    for i in range(FILES):
        (root / "pkg" / f"m{i}.py").write_text(_module(i, "main"))
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "modules")
    git(root, "checkout", "-q", "-b", "feature/x")
    for i in range(CHANGED):
        (root / "pkg" / f"m{i}.py").write_text(_module(i, "feature"))
    git(root, "commit", "-q", "-am", "feature side")
    git(root, "checkout", "-q", "main")

    project = Project.open(root)
    first = crawl(project, summarizer="local")
    assert first["summarizers"] == {"local": FILES + 1}  # the modules and README
    git(root, "checkout", "-q", "feature/x")
    feature = crawl(project, summarizer="local")
    assert feature["summarizers"] == {"local": CHANGED} and "reused_summaries" not in feature

    embedded: list[int] = []  # texts the real model embeds (counted, not replaced)
    model_embed = project.embedder.embed
    project.embedder.embed = lambda texts: embedded.append(len(texts)) or model_embed(texts)
    for branch, flavour in (("main", "main"), ("feature/x", "feature"), ("main", "main")):
        git(root, "checkout", "-q", branch)
        again = crawl(project, summarizer="local")
        assert sum(embedded) == 0, embedded  # the vectors were kept with the summaries too
        assert again["summarizers"] == {} and again["reused_summaries"] == CHANGED, again
        assert sorted(again["indexed_files"]) == [f"pkg/m{i}.py" for i in sorted(range(CHANGED), key=str)]
        rows = project.db.open_table("code_index").search().where("id = 'pkg/m0.py'").to_list()
        assert f"handle_{flavour}_0" in rows[0]["symbols"], rows[0]["symbols"]

    # asking for Gemini does not take a local summary as one
    from contextware.codeindex.by_content import known

    digests = [r["content_hash"] for r in project.db.open_table("code_index").search().limit(None).to_list()]
    model = project.embedder.model_id
    assert len(known(project, digests, "local", model)) == len(digests)
    assert all(vectors for _, _, vectors in known(project, digests, "local", model).values())
    assert all(not vectors for _, _, vectors in known(project, digests, "local", "another-model").values())
    assert known(project, digests, "gemini", model) == {}


def test_a_linked_memory_is_stale_only_while_its_file_differs(tmp_path: Path) -> None:
    """Code links compare content hashes: a fact tied to a file reads "may be stale" on the branch
    where the file differs, and not once the checkout is back on the content it was linked to."""
    from contextware.memory.recall.pipeline import ask
    from contextware.memory.records import save_fact

    root = new_repo(tmp_path / "repo")
    (root / "pkg").mkdir()
    (root / "pkg" / "m0.py").write_text(_module(0, "main"))
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "m0")
    git(root, "checkout", "-q", "-b", "feature/x")
    (root / "pkg" / "m0.py").write_text(_module(0, "feature"))
    git(root, "commit", "-q", "-am", "feature m0")
    git(root, "checkout", "-q", "main")
    project = Project.open(root)
    crawl(project, summarizer="local")
    save_fact(project, "Values of part 0 are doubled by `pkg/m0.py` before they are stored.")

    def flag() -> str | None:
        out = ask(project, "where are values of part 0 doubled?", scope="memory", min_confidence=0, branch="any")
        return out["results"][0].get("may_be_stale")

    assert flag() is None
    git(root, "checkout", "-q", "feature/x")
    crawl(project, summarizer="local")
    assert flag() == "pkg/m0.py differs on this branch", flag()  # learned on main: not a change to confirm
    git(root, "checkout", "-q", "main")
    crawl(project, summarizer="local")
    assert flag() is None


def test_summaries_no_file_has_are_pruned_after_code_index_keep_days(tmp_path: Path) -> None:
    import time

    root = new_repo(tmp_path / "repo")
    (root / "a.py").write_text(_module(1, "main"))
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "a")
    git(root, "checkout", "-q", "-b", "feature/x")
    (root / "a.py").write_text(_module(1, "feature"))
    git(root, "commit", "-q", "-am", "feature")
    project = Project.open(root)
    crawl(project, summarizer="local")  # feature's a.py
    git(root, "checkout", "-q", "main")
    kept = crawl(project, summarizer="local")  # main's: feature's summary is kept (30 days by default)
    assert "pruned_summaries" not in kept
    (project.data_dir / "config.json").write_text('{"code_index_keep_days": 0.00001}')  # under a second
    project = Project.open(root)
    time.sleep(1.2)
    assert crawl(project, summarizer="local")["pruned_summaries"] == 1  # feature's a.py: no file has it
    git(root, "checkout", "-q", "feature/x")
    assert crawl(project, summarizer="local")["summarizers"] == {"local": 1}  # summarised again
