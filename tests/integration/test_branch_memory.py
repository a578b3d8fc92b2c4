"""Memory that knows the branch, with real git (no mocks): each memory records the branch and commit
it was learned on, and recall on each side of a switch, a merge commit, a fast-forward, a rebase, a
squash merge (then ``memory promote --branch``), a detached HEAD and a linked worktree returns exactly
the memories it should.  The saves and recalls run in-process on the real store and model; the
command line, the MCP server and the prompt hook are in ``test_branch_memory_processes``."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from contextware.memory.branches import promote
from contextware.memory.recall.pipeline import ask
from contextware.memory.records import save_fact
from contextware.storage import gitstate
from contextware.storage.project import Project
from tests.support.branch_git import commit, git, new_repo

QUESTION = "which port does the deploy script of each service listen on?"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return new_repo(tmp_path / "repo")


def fact(project: Project, service: str, port: int) -> str:
    return save_fact(project, f"The deploy script of the {service} service listens on port {port}.")["id"]


def seen(project: Project, branch: str = "current") -> set[str]:
    out = ask(project, QUESTION, scope="memory", limit=50, min_confidence=0, branch=branch)
    return {r["id"] for r in out["results"]}


def test_head_is_read_from_git_files_without_git(repo: Path) -> None:
    sha = git(repo, "rev-parse", "HEAD")
    assert gitstate.head(repo) == gitstate.Head("main", sha, gitstate.git_dirs(repo))
    git(repo, "pack-refs", "--all")  # the ref now lives in packed-refs only
    assert not (repo / ".git/refs/heads/main").exists() and gitstate.head(repo).commit == sha
    git(repo, "checkout", "-q", "--detach")
    assert (gitstate.head(repo).branch, gitstate.head(repo).commit) == (None, sha)
    assert gitstate.head(repo.parent).dirs is None  # not a repository


def test_each_side_of_a_merge_sees_what_it_should(repo: Path) -> None:
    project = Project.open(repo)
    everyone = fact(project, "gateway", 7000)
    main_sha = git(repo, "rev-parse", "HEAD")
    row = project.db.open_table("facts").search().where(f"id = '{everyone}'").to_list()[0]
    assert (row["branch"], row["commit"]) == ("main", main_sha)

    # feature/ff: saved before its own first commit and after; merged by fast-forward
    git(repo, "checkout", "-q", "-b", "feature/ff")
    early = fact(project, "billing", 7001)
    commit(repo, "ff1")
    late = fact(project, "search", 7002)
    # feature/merge: merged with a merge commit after main moved on
    git(repo, "checkout", "-q", "main")
    git(repo, "checkout", "-q", "-b", "feature/merge")
    commit(repo, "m1")
    merged = fact(project, "ledger", 7003)
    # feature/open: never merged, and a save right after it was made (its commit is main's)
    git(repo, "checkout", "-q", "main")
    git(repo, "checkout", "-q", "-b", "feature/open")
    unmerged_early = fact(project, "mailer", 7004)
    commit(repo, "o1")
    unmerged = fact(project, "pager", 7005)

    git(repo, "checkout", "-q", "main")
    assert seen(project) == {everyone}
    assert seen(project, "any") == {everyone, early, late, merged, unmerged_early, unmerged}
    assert seen(project, "feature/open") == {everyone, unmerged_early, unmerged}

    git(repo, "merge", "-q", "--ff-only", "feature/ff")
    assert seen(project) == {everyone, early, late}
    git(repo, "merge", "-q", "--no-ff", "-m", "merge", "feature/merge")
    assert seen(project) == {everyone, early, late, merged}
    git(repo, "checkout", "-q", "feature/open")
    assert seen(project) == {everyone, unmerged_early, unmerged}  # main's later merges are not its
    git(repo, "checkout", "-q", "feature/merge")
    assert seen(project) == {everyone, merged}

    # a memory older than every branch (saved before this version) is everyone's
    project.db.write(
        "facts", lambda t: t.update(where=f"id = '{unmerged}'", values_sql={"branch": "NULL", "commit": "NULL"})
    )
    assert unmerged in seen(project)


def test_rebase_squash_promote_and_detached_head(repo: Path) -> None:
    project = Project.open(repo)
    git(repo, "checkout", "-q", "-b", "feature/rebased")
    commit(repo, "r1")
    rebased = fact(project, "catalog", 7010)
    git(repo, "checkout", "-q", "main")
    git(repo, "checkout", "-q", "-b", "feature/squashed")
    commit(repo, "s1")
    squashed = fact(project, "reports", 7011)
    git(repo, "checkout", "-q", "main")
    commit(repo, "main2")
    assert seen(project) == set()

    # rebase onto main then fast-forward: the commit the memory names is gone from main's history,
    # the branch's log still leads there
    git(repo, "checkout", "-q", "feature/rebased")
    git(repo, "rebase", "-q", "main")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--ff-only", "feature/rebased")
    assert seen(project) == {rebased}

    # squash merge: no ancestry; promote makes the branch's memories everyone's
    git(repo, "merge", "-q", "--squash", "feature/squashed")
    git(repo, "commit", "-q", "-m", "squashed")
    assert seen(project) == {rebased}
    out = promote(project, "feature/squashed")
    assert out["promoted"]["facts"] == 1 and out["total"] == 1
    assert seen(project) == {rebased, squashed}

    # detached HEAD: the commit only; seen where that commit is in the history
    git(repo, "checkout", "-q", "--detach")
    detached = fact(project, "archive", 7012)
    row = project.db.open_table("facts").search().where(f"id = '{detached}'").to_list()[0]
    assert row["branch"] is None and row["commit"] == git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    assert detached in seen(project)
    git(repo, "checkout", "-q", "feature/squashed")
    assert detached not in seen(project)


def test_a_linked_worktree_recalls_with_its_own_head(repo: Path, tmp_path: Path) -> None:
    main = Project.open(repo)
    ours = fact(main, "gateway", 7020)
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "feature/wt")
    wt = Project.open(tmp_path / "wt")
    assert wt.data_dir == main.data_dir  # one store
    commit(tmp_path / "wt", "w1")
    theirs = fact(wt, "uploads", 7021)
    row = wt.db.open_table("facts").search().where(f"id = '{theirs}'").to_list()[0]
    assert (row["branch"], row["commit"]) == ("feature/wt", git(tmp_path / "wt", "rev-parse", "HEAD"))
    assert seen(wt) == {ours, theirs}
    assert seen(Project.open(repo)) == {ours}
    git(repo, "merge", "-q", "--no-ff", "-m", "merge wt", "feature/wt")
    assert seen(Project.open(repo)) == {ours, theirs}


def test_ancestry_is_one_git_process_per_head(repo: Path) -> None:
    project = Project.open(repo)
    git(repo, "checkout", "-q", "-b", "feature/x")
    commit(repo, "x1")
    fact(project, "alpha", 7030)
    git(repo, "checkout", "-q", "main")
    before = gitstate.runs
    for _ in range(3):
        seen(project)
    assert gitstate.runs - before == 1  # cached per HEAD commit
    commit(repo, "main2")
    seen(project)
    seen(project)
    assert gitstate.runs - before == 2  # a new HEAD: one more


def test_show_marks_memories_of_unmerged_branches(repo: Path) -> None:
    project = Project.open(repo)
    git(repo, "checkout", "-q", "-b", "feature/jwt")
    commit(repo, "j1")
    fact(project, "auth", 7040)
    git(repo, "checkout", "-q", "main")
    project.ensure_data_dir()
    (project.data_dir / "config.json").write_text('{"branch_memory": "show"}')
    project = Project.open(repo)
    out = ask(project, QUESTION, scope="memory", min_confidence=0)
    assert [r.get("branch_note") for r in out["results"]] == ["from feature/jwt, not merged"]


def test_the_same_memory_saved_on_a_second_branch_becomes_everyones(repo: Path) -> None:
    project = Project.open(repo)
    git(repo, "checkout", "-q", "-b", "feature/a")
    commit(repo, "a1")
    first = fact(project, "queue", 7050)
    git(repo, "checkout", "-q", "main")
    assert seen(project) == set()
    again = save_fact(project, "The deploy script of the queue service listens on port 7050.")
    assert again["duplicate_of"] == first
    assert seen(project) == {first}
    git(repo, "checkout", "-q", "-b", "feature/b")
    assert seen(project) == {first}


def test_the_prompt_hook_never_shows_unmerged_memories(repo: Path) -> None:
    """``branch_memory: "show"`` marks them in recall; the hook's recall (a margin: it injects
    unasked) still leaves them out."""
    from contextware.memory.recall import parse_query, recall

    project = Project.open(repo)
    git(repo, "checkout", "-q", "-b", "feature/jwt")
    commit(repo, "j1")
    fact(project, "auth", 7060)
    git(repo, "checkout", "-q", "main")
    project.ensure_data_dir()
    (project.data_dir / "config.json").write_text('{"branch_memory": "show"}')
    project = Project.open(repo)
    asked = parse_query(QUESTION, scope="memory", min_confidence=0)
    hooked = parse_query(QUESTION, scope="memory", min_confidence=0, margin=0.5)
    assert len(recall(project, asked).results) == 1
    assert list(recall(project, hooked).results) == []


def test_a_promotion_travels_through_the_memory_file(repo: Path, tmp_path: Path) -> None:
    """Promoted on one clone, the memory is everyone's on a clone that imports the file, also when
    that clone's own copy still names the branch (the promotion is the later change)."""
    from contextware.memory.team.share import export_memory, import_memory

    project = Project.open(repo)
    git(repo, "checkout", "-q", "-b", "feature/sq")
    commit(repo, "s1")
    rid = fact(project, "exports", 7070)
    file = tmp_path / "memory.jsonl"
    export_memory(project, file)
    other = Project.open(new_repo(tmp_path / "other"))
    import_memory(other, file.read_text(), source="memory.jsonl")
    row = other.db.open_table("facts").search().where(f"id = '{rid}'").to_list()[0]
    assert row["branch"] == "feature/sq"
    time.sleep(1.1)  # the file keeps seconds
    promote(project, "feature/sq")
    export_memory(project, file)
    import_memory(other, file.read_text(), source="memory.jsonl")
    row = other.db.open_table("facts").search().where(f"id = '{rid}'").to_list()[0]
    assert row["branch"] is None and row["commit"] is None


def test_a_branch_deleted_without_merging_waits_in_the_review_queue(repo: Path) -> None:
    """Its memories stay hidden; once ``branch_memory_days`` old the browser's review queue lists
    the branch, and its Promote button makes them everyone's.  A branch merged then deleted is not
    listed (its memories reached HEAD)."""
    from contextware.memory.branches import gone_branches
    from tests.support.browser import form_token, request, served_browser

    project = Project.open(repo)
    git(repo, "checkout", "-q", "-b", "feature/dead")
    commit(repo, "d1")
    dead = fact(project, "legacy", 7080)
    git(repo, "checkout", "-q", "main")
    git(repo, "checkout", "-q", "-b", "feature/done")
    commit(repo, "f1")
    done = fact(project, "ledger", 7081)
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge done", "feature/done")
    git(repo, "branch", "-q", "-D", "feature/dead")
    git(repo, "branch", "-q", "-d", "feature/done")
    assert seen(project) == {done}
    assert gone_branches(project) == []  # newer than branch_memory_days (30)
    listed = gone_branches(project, days=0)
    assert [(g["branch"], g["memories"]) for g in listed] == [("feature/dead", 1)]

    (project.data_dir / "config.json").write_text('{"branch_memory_days": 0}')
    project = Project.open(repo)
    with served_browser(project) as served:
        page = request(served.port, "/review", token=served.token).text
        assert "Branches deleted without merging (1)" in page and "feature/dead" in page
        sent = request(
            served.port,
            "/review/promote",
            method="POST",
            token=served.token,
            form={"token": form_token(page), "branch": "feature/dead"},
        )
        assert sent.status == 303
        assert "Branches deleted without merging (0)" in request(served.port, "/review", token=served.token).text
    assert seen(project) == {done, dead}


def test_a_squash_merged_branch_deleted_afterwards_is_detected(repo: Path) -> None:
    """The common squash case: the branch is deleted after a squash merge of its changes.  Its
    changes are in HEAD, so the review queue lists it at once, marked squashed; a deleted branch
    whose changes are not in HEAD waits for branch_memory_days."""
    from contextware.memory.branches import gone_branches

    project = Project.open(repo)
    git(repo, "checkout", "-q", "-b", "feature/sq")
    commit(repo, "s1")
    commit(repo, "s2")
    fact(project, "exports", 7090)
    git(repo, "checkout", "-q", "main")
    git(repo, "checkout", "-q", "-b", "feature/dropped")
    commit(repo, "x1")
    fact(project, "imports", 7091)
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--squash", "feature/sq")
    git(repo, "commit", "-q", "-m", "sq (squashed)")
    git(repo, "branch", "-q", "-D", "feature/sq")
    git(repo, "branch", "-q", "-D", "feature/dropped")
    assert seen(project) == set()
    listed = gone_branches(project)
    assert [(g["branch"], g["squashed"]) for g in listed] == [("feature/sq", True)]
    assert {g["branch"]: g["squashed"] for g in gone_branches(project, days=0)} == {
        "feature/sq": True,
        "feature/dropped": False,
    }


def test_a_named_pipe_in_git_files_never_hangs_a_save(repo: Path) -> None:
    """A FIFO planted as ``.git/HEAD``, a loose ref or a branch's log: reading where a memory was
    learned gives up on it at once (no branch) instead of blocking every save and prompt hook."""
    import threading

    git(repo, "checkout", "-q", "-b", "feature/p")
    commit(repo, "p1")
    git(repo, "pack-refs", "--all")
    logs = repo / ".git/logs/refs/heads/feature/p"
    logs.unlink()
    os.mkfifo(logs)
    answers: list[object] = []
    worker = threading.Thread(
        target=lambda: answers.append(gitstate.reflog(gitstate.git_dirs(repo), "feature/p")), daemon=True
    )
    worker.start()
    worker.join(5)
    assert answers == [[]], "reading a FIFO as a reflog blocked"

    head = repo / ".git/HEAD"
    head.unlink()
    os.mkfifo(head)
    worker = threading.Thread(target=lambda: answers.append(gitstate.head(repo)), daemon=True)
    worker.start()
    worker.join(5)
    assert len(answers) == 2 and answers[1] == gitstate.Head(dirs=gitstate.git_dirs(repo)), answers
    project = Project.open(repo)
    rid = fact(project, "pipes", 7100)
    row = project.db.open_table("facts").search().where(f"id = '{rid}'").to_list()[0]
    assert row["branch"] is None and row["commit"] is None


def test_recall_text_says_where_a_memory_was_learned() -> None:
    from contextware.cli.recall import render_hit

    hit = {"collection": "facts", "id": "fact-000000000001", "score": 0.5, "kind": "note", "text": "x"}
    assert "[on feature/x]" in render_hit({**hit, "branch": "feature/x"})
    noted = render_hit({**hit, "branch": "feature/x", "branch_note": "from feature/x, not merged"})
    assert "(from feature/x, not merged)" in noted and "[on" not in noted
    assert "[on" not in render_hit(hit)  # everyone's
