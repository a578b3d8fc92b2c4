"""Team memory that merges like code: two clones of one project exchange `.contextware/memory.jsonl`
through real `git merge` (with the merge driver, and without it), after random concurrent saves,
updates, supersessions and deletions on each side.  Real git, real LanceDB, the real model."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.team_git import Clone, RandomWork, file_entries, git, make_clones


def _exchange(a: Clone, b: Clone) -> None:
    """Alice shares, Bob shares (merging Alice's), Alice pulls Bob's merge: both end the same."""
    a.share()
    b.share()
    a.share()
    assert a.file.read_bytes() == b.file.read_bytes()
    assert a.memories() == b.memories()
    assert git(a.root, "status", "--porcelain", "--", ".contextware").stdout == ""


def _rounds(tmp_path: Path, rounds: int, *, driver: bool, seed: int) -> tuple[Clone, Clone]:
    a, b = make_clones(tmp_path, driver=driver)
    work = {a.name: RandomWork(seed), b.name: RandomWork(seed + 1)}
    gone: set[str] = set()  # deleted on one side and not touched by the other in that round
    saved: set[str] = set()
    for n in range(rounds):
        done = {}
        for clone in (a, b):
            steps = [work[clone.name].step(clone) for _ in range(work[clone.name].rng.randint(1, 4))]
            done[clone.name] = {
                "deleted": set().union(*(s["deleted"] for s in steps)),
                "touched": set().union(*(s["touched"] for s in steps)),
            }
        if n % 5 == 2:  # the same text saved on both sides
            text = f"Round {n}: both sides agree to pin the lockfile."
            for clone in (a, b):
                done[clone.name]["touched"] |= work[clone.name].step(clone, shared_text=text)["touched"]
        for mine, other in ((a, b), (b, a)):
            gone |= done[mine.name]["deleted"] - done[other.name]["touched"]
            saved |= done[mine.name]["touched"]
        saved -= done[a.name]["deleted"] | done[b.name]["deleted"]
        _exchange(a, b)
        live = a.live_ids()
        assert not (live & gone), f"round {n}: deleted memories came back: {sorted(live & gone)}"
        assert saved <= live, f"round {n}: memories were lost: {sorted(saved - live)}"
        if driver:
            assert a.conflicts == b.conflicts == 0
    return a, b


def test_a_few_rounds_through_the_merge_driver_never_conflict(tmp_path):
    a, _ = _rounds(tmp_path, 4, driver=True, seed=7)
    assert git(a.root, "config", "--get", "merge.contextware.driver").stdout.strip().endswith("merge-driver %O %A %B")
    assert ".contextware/memory.jsonl merge=contextware" in (a.root / ".gitattributes").read_text()


@pytest.mark.slow
@pytest.mark.timeout(900)  # ~3 min alone (50 rounds of git and our processes); twice that beside other work
def test_fifty_rounds_through_the_merge_driver_never_conflict(tmp_path):
    _rounds(tmp_path, 50, driver=True, seed=11)


@pytest.mark.slow
@pytest.mark.timeout(900)  # ~3 min alone (50 rounds of git and our processes); twice that beside other work
def test_fifty_rounds_without_the_driver_lose_and_resurrect_nothing(tmp_path):
    a, b = _rounds(tmp_path, 50, driver=False, seed=23)
    assert a.conflicts + b.conflicts > 0  # plain git did conflict, and import resolved it


def test_without_the_driver_import_resolves_the_conflict(tmp_path):
    a, b = _rounds(tmp_path, 3, driver=False, seed=5)
    assert a.memories() == b.memories()


def test_a_deletion_travels_and_stays_deleted(tmp_path):
    from contextware.memory.edits import delete
    from contextware.memory.records import save_fact

    a, b = make_clones(tmp_path)
    doomed = save_fact(a.project, "The staging database is called pink.")["id"]
    _exchange(a, b)
    assert doomed in b.live_ids()
    delete(b.project, doomed)
    _exchange(a, b)
    assert doomed not in a.live_ids() and doomed not in b.live_ids()
    stone = next(e for e in file_entries(a.file) if e["id"] == doomed)
    assert set(stone) == {"id", "created_at", "deleted_at", "deleted_by"} and stone["deleted_by"] == "bob"
    work = RandomWork(3)
    for _ in range(10):
        work.step(a)
        work.step(b)
        _exchange(a, b)
        assert doomed not in a.live_ids() and doomed not in b.live_ids()


def test_the_same_text_saved_in_both_clones_is_one_memory_with_one_id(tmp_path):
    from contextware.memory.records import save_episode, save_fact

    a, b = make_clones(tmp_path)
    fa = save_fact(a.project, "Run the linter before every push.", kind="convention")
    fb = save_fact(b.project, "Run the linter before every push.", kind="convention")
    ea = save_episode(a.project, "Bumped the cache key.", goal="Fix flaky CI", result="success")
    eb = save_episode(b.project, "Bumped the cache key.", goal="Fix flaky CI", result="success")
    assert fa["id"] == fb["id"] and ea["id"] == eb["id"]
    # Saved under two kinds (or by an older version, with random ids): the smaller id wins on both sides.
    ka = save_fact(a.project, "Tabs are banned in YAML.", kind="convention")["id"]
    kb = save_fact(b.project, "Tabs are banned in YAML.", kind="constraint")["id"]
    assert ka != kb
    _exchange(a, b)
    for clone in (a, b):
        texts = [r["text"] for r in clone.memories() if r["collection"] == "facts"]
        assert sorted(texts) == sorted(set(texts)), texts
        assert min(ka, kb) in clone.live_ids() and max(ka, kb) not in clone.live_ids()
    assert len([e for e in file_entries(a.file) if e["id"] == fa["id"]]) == 1


def test_supersession_chains_survive_any_order_of_imports(tmp_path):
    from contextware.memory.records import save_fact
    from contextware.memory.team.share import export_memory, import_memory
    from contextware.storage.project import Project

    (tmp_path / "src").mkdir()
    src = Project.open(tmp_path / "src")
    first = save_fact(src, "Deploy with heroku.", kind="decision")["id"]
    text1 = export_memory(src, None)["jsonl"]
    second = save_fact(src, "Deploy with fly.", kind="decision", supersedes=first)["id"]
    text2 = export_memory(src, None)["jsonl"]
    third = save_fact(src, "Deploy with fly --remote-only.", kind="decision", supersedes=second)["id"]
    text3 = export_memory(src, None)["jsonl"]
    lines = text3.splitlines()
    shuffled = "\n".join([lines[0], *reversed(lines[1:])]) + "\n"  # lines in any order
    results = []
    for n, order in enumerate(([text3, text1, text2], [text1, text2, text3], [text2, shuffled, text1])):
        (tmp_path / f"dst{n}").mkdir()
        dst = Project.open(tmp_path / f"dst{n}")
        for text in order:
            import_memory(dst, text, source="x")
        results.append(export_memory(dst, None)["jsonl"])
    assert results[0] == results[1] == results[2] == text3
    assert third in text3


def test_install_project_registers_the_driver_and_uninstall_takes_it_out(tmp_path):
    from contextware.hosts.install.dispatch import install, uninstall

    root = tmp_path / "app"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "merge.contextware.name", "someone else's")  # restored by uninstall
    attributes = root / ".gitattributes"
    attributes.write_text("*.png binary\n")
    first = install("mcp", "project", project_root=str(root), host="cursor")
    assert first["changed"] and ".gitattributes" in first["merge_driver"]["written"], first
    assert attributes.read_text() == "*.png binary\n.contextware/memory.jsonl merge=contextware\n"
    driver = git(root, "config", "--local", "--get", "merge.contextware.driver").stdout.strip()
    assert driver.endswith("merge-driver %O %A %B")
    assert git(root, "check-attr", "merge", ".contextware/memory.jsonl").stdout.strip().endswith("contextware")
    again = install("mcp", "project", project_root=str(root), host="cursor")
    assert again["merge_driver"]["written"] == [], again
    # Another host's project install keeps the driver when the first is removed.
    install("mcp", "project", project_root=str(root), host="vscode")
    uninstall("mcp", "project", project_root=str(root), host="cursor")
    assert "merge=contextware" in attributes.read_text()
    out = uninstall("mcp", "project", project_root=str(root), host="vscode")
    assert ".gitattributes" in out["merge_driver"]["removed"], out
    assert attributes.read_text() == "*.png binary\n"
    assert git(root, "config", "--local", "--get", "merge.contextware.driver", check=False).returncode == 1
    assert git(root, "config", "--local", "--get", "merge.contextware.name").stdout.strip() == "someone else's"
    # A .gitattributes the install created goes with it.
    attributes.unlink()
    install("mcp", "project", project_root=str(root), host="cursor")
    uninstall("mcp", "project", project_root=str(root), host="cursor")
    assert not attributes.exists()


def test_the_driver_command_merges_three_files_and_a_bad_side_leaves_markers(tmp_path):
    import json
    import subprocess

    from contextware.hosts.install.git_merge import driver_command

    header = '{"format": "contextware-memory", "version": 2}\n'

    def fact(i: str, text: str, when: str) -> str:
        row = {"id": i, "kind": "note", "text": text, "created_at": when, "updated_at": when}
        return json.dumps(row) + "\n"

    base = header + fact("fact-00000000000a", "A.", "2026-01-01T00:00:00Z")
    ours = base + fact("fact-00000000000b", "B.", "2026-01-02T00:00:00Z")
    theirs = header + fact("fact-00000000000c", "C.", "2026-01-03T00:00:00Z")  # A deleted (no tombstone)
    paths = []
    for name, text in (("O", base), ("A", ours), ("B", theirs)):
        (tmp_path / name).write_text(text)
        paths.append(str(tmp_path / name))
    command = driver_command().replace("%O %A %B", " ".join(paths))
    done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr
    merged = [json.loads(line)["id"] for line in (tmp_path / "A").read_text().splitlines()[1:]]
    assert merged == ["fact-00000000000b", "fact-00000000000c"]
    (tmp_path / "B").write_text(header + "{oops\n")
    failed = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=60)
    assert failed.returncode == 2 and "Line 2" in failed.stdout
    assert (tmp_path / "A").read_text().startswith("<<<<<<< ours\n")
