"""Two (or more) clones of one git project sharing ``.contextware/memory.jsonl`` through a bare
origin: real ``git`` processes, real LanceDB, the real model; the memory calls run in-process."""

from __future__ import annotations

import json
import os
import random
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MEMORY_FILE = ".contextware/memory.jsonl"
COMPARED = (
    "id",
    "collection",
    "text",
    "kind",
    "topics",
    "status",
    "supersedes",
    "superseded_by",
    "goal",
    "result",
    "category",
    "summary",
    "created_at",
    "updated_at",
)


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
    }
    out = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    if check and out.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({out.returncode}): {out.stdout}\n{out.stderr}")
    return out


@dataclass
class Clone:
    name: str
    root: Path
    project: Any
    conflicts: int = 0
    ops: list[str] = field(default_factory=list)

    @property
    def file(self) -> Path:
        return self.root / MEMORY_FILE

    def export(self) -> dict:
        from contextware.memory.team.share import export_memory

        return export_memory(self.project, self.file)

    def import_file(self) -> dict:
        from contextware.memory.team.share import import_memory

        return import_memory(self.project, self.file.read_text(encoding="utf-8"), source=MEMORY_FILE)

    def commit(self, message: str) -> None:
        git(self.root, "add", MEMORY_FILE)
        if git(self.root, "diff", "--cached", "--quiet", check=False).returncode != 0:
            git(self.root, "commit", "-q", "-m", message)

    def share(self) -> None:
        """Export, commit, pull (merging), import, export, commit the merge, push."""
        self.export()
        self.commit(f"{self.name}: memory")
        pulled = git(self.root, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main", check=False)
        if pulled.returncode != 0:
            assert "CONFLICT" in pulled.stdout + pulled.stderr, pulled.stdout + pulled.stderr
            self.conflicts += 1
            assert "<<<<<<<" in self.file.read_text()
        self.import_file()
        self.export()
        git(self.root, "add", MEMORY_FILE)
        if pulled.returncode != 0:
            git(self.root, "commit", "-q", "--no-edit")
        else:
            self.commit(f"{self.name}: memory after merge")
        git(self.root, "push", "-q", "origin", "HEAD:main")

    def memories(self) -> list[dict]:
        from contextware.memory.records import list_records

        rows = list_records(self.project, None, limit=100_000)["records"]
        return sorted(
            ({k: r.get(k) for k in COMPARED} for r in rows if r["collection"] != "logs"), key=lambda r: r["id"]
        )

    def live_ids(self) -> set[str]:
        return {r["id"] for r in self.memories()}


def make_clones(tmp: Path, names: tuple[str, ...] = ("alice", "bob"), *, driver: bool = True) -> list[Clone]:
    """A bare origin with one commit, cloned once per name (each with its own data dir in the clone)."""
    from contextware.hosts.install import git_merge
    from contextware.storage.project import Project

    origin = tmp / "origin.git"
    git(tmp, "init", "-q", "--bare", "-b", "main", str(origin))
    seed = tmp / "seed"
    git(tmp, "clone", "-q", str(origin), str(seed))
    git(seed, "config", "user.name", "seed")
    (seed / ".gitignore").write_text("contextware_data/\n")
    (seed / "README.md").write_text("a project\n")
    git(seed, "add", ".")
    git(seed, "commit", "-q", "-m", "init")
    git(seed, "push", "-q", "origin", "HEAD:main")
    clones = []
    for name in names:
        root = tmp / name
        git(tmp, "clone", "-q", str(origin), str(root))
        git(root, "config", "user.name", name)
        if driver:
            git_merge.install({}, root)
        clones.append(Clone(name, root, Project.open(root)))
    return clones


class RandomWork:
    """Random saves, updates, supersessions and deletions on one clone, remembering what it deleted."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.counter = 0

    def text(self, who: str) -> str:
        self.counter += 1
        words = ["deploy", "tests", "cache", "schema", "linter", "release", "docs", "queue", "index", "auth"]
        picked = " ".join(self.rng.sample(words, 3))
        return f"{who} note {self.counter}: {picked} {self.rng.randrange(10**9)}."

    def step(self, clone: Clone, shared_text: str | None = None) -> dict[str, set[str]]:
        """One random operation; returns {"deleted": ids, "touched": ids} for the oracle."""
        from contextware.memory.edits import delete, update
        from contextware.memory.records import save_episode, save_fact

        p = clone.project
        live = clone.memories()
        active_facts = [r for r in live if r["collection"] == "facts" and r["status"] == "active"]
        choice = self.rng.random()
        out: dict[str, set[str]] = {"deleted": set(), "touched": set()}
        if shared_text is not None:
            out["touched"].add(save_fact(p, shared_text, kind="convention")["id"])
        elif choice < 0.35 or not live:
            if self.rng.random() < 0.75:
                out["touched"].add(
                    save_fact(p, self.text(clone.name), kind=self.rng.choice(["note", "decision"]))["id"]
                )
            else:
                r = save_episode(p, self.text(clone.name), goal=f"goal {self.counter}", result="success")
                out["touched"].add(r["id"])
        elif choice < 0.55:
            target = self.rng.choice(live)
            field = "summary" if target["collection"] == "episodes" else "text"
            update(p, target["id"], **{field: self.text(clone.name)})
            out["touched"].add(target["id"])
        elif choice < 0.75 and active_facts:
            old = self.rng.choice(active_facts)
            new = save_fact(p, self.text(clone.name), kind="decision", supersedes=old["id"])
            out["touched"] |= {old["id"], new["id"]}
        else:
            target = self.rng.choice(live)
            delete(p, target["id"])
            out["deleted"].add(target["id"])
            if target.get("supersedes") in {r["id"] for r in live}:  # made current again
                out["touched"].add(target["supersedes"])
        clone.ops.append(f"{choice:.2f}")
        return out


def file_entries(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]
