"""Memory that knows the branch: where each memory was learned, and which memories a checkout sees.

Every fact, episode and log records ``branch`` and ``commit`` (HEAD when it was saved; a detached
HEAD records the commit only), read from ``.git`` without git (``storage.gitstate.head``).  Rows
saved before this existed have neither and are everyone's.

A view (a branch and its tip commit) sees its own branch's rows, everyone's, and another branch's
once that branch's work after the memory reached the view: through its reflog when git keeps one
(merge, fast-forward, rebase; a squash merge needs ``memory promote --branch B``), else when the
row's commit is an ancestor of the tip.  The full rule and why: docs/decisions/0010.

The rule becomes one SQL filter per table, built from the table's distinct (branch, commit) pairs
(read once per table version), so the searches stay LanceDB's own; the ancestry is one
``git rev-list`` per tip commit, cached (``gitstate.ancestors``), and asked only when some row needs it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from contextware.core.errors import FieldError
from contextware.core.text import sql_str, sql_time, utcnow
from contextware.memory.results import GoneBranch, MemoryRow, Promoted
from contextware.storage import gitstate
from contextware.storage.candidate import RecalledItem
from contextware.storage.schemas import LearnedOn

if TYPE_CHECKING:
    from lancedb.table import Table

    from contextware.storage.project import Project

# The tables whose rows carry where they were learned.
BRANCH_TABLES = ("facts", "episodes", "logs")
CHOICES = ("current", "any")  # besides a branch name
BRANCH_MEMORY = ("hide", "show")  # config ``branch_memory``: memories of unmerged branches


def learned_on(root: Path) -> LearnedOn:
    """``{"branch", "commit"}`` of the checkout at ``root`` now (both None outside a repository)."""
    where = gitstate.head(root)
    return {"branch": where.branch, "commit": where.commit}


def stamp_learned(project: "Project", rows: list[MemoryRow]) -> None:
    """Set where each new row was learned (rows that already say, e.g. imported ones, keep theirs)."""
    here = learned_on(project.root)
    for row in rows:
        if "branch" not in row and "commit" not in row:
            row["branch"], row["commit"] = here.get("branch"), here.get("commit")


def learned_again(project: "Project", table_name: str, record_id: str, row: MemoryRow) -> None:
    """The same memory saved again on another branch than the one it was learned on: it is known
    on both lines of work, so it becomes everyone's (its branch and commit are cleared)."""
    table = project.db.open_table(table_name)
    if table is None or "branch" not in table.schema.names or (row.get("branch") is None and row.get("commit") is None):
        return
    cond = f"id = {sql_str(record_id)}"

    def read() -> list[LearnedOn]:
        return cast("list[LearnedOn]", table.search().where(cond).select(["branch", "commit"]).limit(1).to_list())

    found = project.db.read(read)
    if not found or (found[0].get("branch") is None and found[0].get("commit") is None):
        return
    if found[0].get("branch") == row.get("branch") and row.get("branch") is not None:
        return
    _promote_table(project, table_name, table, cond)


def check_branch(value: str | None) -> str:
    """``current`` (default), ``any`` or a branch name (as git allows it, roughly)."""
    if value is None or value == "":
        return "current"
    name = value.strip()
    if name in CHOICES:
        return name
    if (
        not name
        or name.startswith(("-", "/"))
        or ".." in name
        or any(c in name for c in " ~^:?*[\\\0")
        or len(name) > 200
    ):
        raise FieldError(f"{{field}} must be current, any or a branch name, not {value!r}.", field="branch")
    return name


@dataclass
class View:
    """What a checkout sees: ``branch`` (None when detached) at ``commit``."""

    root: Path
    dirs: gitstate.GitDirs
    branch: str | None
    commit: str | None
    _logs: dict[str, list[gitstate.LogEntry]] = field(default_factory=dict)

    @property
    def ancestry(self) -> frozenset[str]:
        if not self.commit:
            return frozenset()
        return gitstate.ancestors(self.root, self.dirs, self.commit)

    def log(self, branch: str) -> list[gitstate.LogEntry]:
        if branch not in self._logs:
            self._logs[branch] = gitstate.reflog(self.dirs, branch)
        return self._logs[branch]

    def merged_until(self, branch: str, commit: str | None) -> float | None:
        """Up to when memories of ``branch`` at ``commit`` have reached the view: ``inf`` when
        ``commit`` (unless the branch was only made there) or a commit the branch pointed at after
        it (later in its log) is an ancestor of the view's tip; when ``commit`` is not in the log (made on a detached HEAD, or the log was
        expired), the latest time the branch pointed at such a commit other than ``commit`` (rows
        saved before it, to the second the log keeps, are merged); None: not merged."""
        entries = self.log(branch)
        if not entries:
            return None
        anc = self.ancestry
        shas = [e.commit for e in entries]
        if commit is not None and commit in shas:
            last = len(shas) - 1 - shas[::-1].index(commit)
            start = last + 1 if entries[last].created else last  # the fork point is not the branch's work
            return float("inf") if any(sha in anc for sha in shas[start:]) else None
        times = [e.at for e in entries if e.commit != commit and e.commit in anc]
        return max(times) if times else None

    def sees(self, branch: str | None, commit: str | None, created_at: object) -> bool:
        """The rule of this module for one row."""
        if branch is None and commit is None:
            return True
        if branch is not None and branch == self.branch:
            return True
        if branch is not None and self.log(branch):
            until = self.merged_until(branch, commit)
            return until is not None and _seconds(created_at) < until + 1
        return commit is not None and commit in self.ancestry


def _seconds(value: object) -> float:
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=timezone.utc)).timestamp()
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return float("inf")
    return float("inf")


def view_of(project: "Project", choice: str = "current") -> View | None:
    """The view ``choice`` asks for: the checkout's HEAD, a named branch's tip, or None (``any``,
    or not a git repository: nothing to tell apart)."""
    if choice == "any":
        return None
    now = gitstate.head(project.root)
    if now.dirs is None:
        return None
    if choice == "current":
        return View(project.root, now.dirs, now.branch, now.commit)
    tip = gitstate.branch_tip(now.dirs, choice)
    if tip is None:
        raise FieldError(
            f"No branch named {choice!r} in this repository; give current, any or a branch.", field="branch"
        )
    return View(project.root, now.dirs, choice, tip)


# -- the rule as SQL --------------------------------------------------------------------------------
_pairs: dict[tuple[str, str, object], list[tuple[str | None, str | None]]] = {}
_pairs_lock = threading.Lock()


def learned_pairs(project: "Project", table_name: str) -> list[tuple[str | None, str | None]]:
    """The distinct (branch, commit) pairs of a table's rows that have either, read once per table
    version (a column scan of two short strings)."""
    from contextware.storage.table_search import version_key

    table = project.db.open_table(table_name)
    if table is None or "branch" not in project.db.schema(table).names:
        return []
    version = project.db.read(lambda: version_key(project.db, table_name, table))  # ~0.1 ms, no LanceDB call
    key = (project.db_uri, table_name, version)
    with _pairs_lock:
        known = _pairs.get(key)
    if known is not None:
        return known

    def scan() -> list[tuple[str | None, str | None]]:
        data = (
            table.search()
            .where("branch IS NOT NULL OR `commit` IS NOT NULL")
            .select(["branch", "commit"])
            .limit(None)
            .to_arrow()
        )
        if data.num_rows == 0:
            return []
        grouped = data.group_by(["branch", "commit"]).aggregate([])
        return list(zip(grouped.column("branch").to_pylist(), grouped.column("commit").to_pylist(), strict=True))

    pairs = project.db.read(scan)
    with _pairs_lock:
        for old in [k for k in _pairs if k[:2] == key[:2]]:
            del _pairs[old]
        _pairs[key] = pairs
    return pairs


def _stamp(seconds: float) -> str:
    return sql_time(datetime.fromtimestamp(int(seconds), tz=timezone.utc))


def _in(values: list[str]) -> str:
    return f"`commit` IN ({', '.join(sql_str(v) for v in sorted(values))})"


def where(project: "Project", table_name: str, view: View | None) -> str | None:
    """The SQL filter that keeps the rows ``view`` sees (None: every row)."""
    if view is None or table_name not in BRANCH_TABLES:
        return None
    pairs = learned_pairs(project, table_name)
    if all(b is not None and b == view.branch for b, _ in pairs):
        return None  # nothing but everyone's and this branch's own: no filter, no git
    parts = ["(branch IS NULL AND `commit` IS NULL)"]
    if view.branch is not None:
        parts.append(f"branch = {sql_str(view.branch)}")
    by_branch: dict[str | None, list[str | None]] = {}
    for b, c in pairs:
        if b is None or b != view.branch:
            by_branch.setdefault(b, []).append(c)
    for b, commits in sorted(by_branch.items(), key=lambda kv: kv[0] or ""):
        if b is not None and view.log(b):
            # time rule: one bound per commit group (a row's own commit does not count as its merge)
            groups: dict[float, list[str | None]] = {}
            for c in commits:
                until = view.merged_until(b, c)
                if until is not None:
                    groups.setdefault(until + 1, []).append(c)
            for bound, cs in groups.items():
                named = [c for c in cs if c is not None]
                which = " OR ".join(([_in(named)] if named else []) + (["`commit` IS NULL"] if None in cs else []))
                when = "" if bound == float("inf") else f" AND created_at < {_stamp(bound)}"
                parts.append(f"(branch = {sql_str(b)} AND ({which}){when})")
            continue
        seen = [c for c in commits if c is not None and c in view.ancestry]
        if seen:
            owner = "branch IS NULL" if b is None else f"branch = {sql_str(b)}"
            parts.append(f"({owner} AND {_in(seen)})")
    return "(" + " OR ".join(parts) + ")"


def note(view: View | None, row: MemoryRow) -> str | None:
    """ "from feature/x, not merged" for a row ``view`` does not see (``branch_memory: "show"``)."""
    if view is None:
        return None
    branch, commit = row.get("branch"), row.get("commit")
    if view.sees(branch, commit, row.get("created_at")):
        return None
    return f"from {branch}, not merged" if branch else f"from commit {str(commit)[:12]}, not in this checkout"


def promote(project: "Project", branch: str) -> Promoted:
    """Make every memory learned on ``branch`` everyone's (after a squash merge, which leaves no
    ancestry to follow): their ``branch`` and ``commit`` are cleared, nothing else changes."""
    name = check_branch(branch)
    if name in CHOICES:
        raise FieldError("{field} takes a branch name, not current or any.", field="branch")
    counts: dict[str, int] = {}
    for table_name in BRANCH_TABLES:
        table = project.db.open_table(table_name)
        if table is None or "branch" not in table.schema.names:
            counts[table_name] = 0
            continue
        counts[table_name] = _promote_table(project, table_name, table, f"branch = {sql_str(name)}")
    return {"ok": True, "branch": name, "promoted": counts, "total": sum(counts.values())}


def _promote_table(project: "Project", table_name: str, table: "Table", cond: str) -> int:
    def count() -> int:
        return int(table.count_rows(cond))

    def clear(tbl: "Table") -> None:
        # a change like any other: later than the copies in teammates' memory files, so it wins there
        tbl.update(where=cond, values={"branch": None, "commit": None, "updated_at": utcnow()})

    found = project.db.read(count)
    if found:
        project.db.write(table_name, clear)
    return found


def gone_branches(project: "Project", days: float | None = None) -> list[GoneBranch]:
    """Branches deleted without being merged (no ref, no log here, and none of their memories'
    commits in HEAD's history) whose newest memory is at least ``days`` old (default: the
    ``branch_memory_days`` setting), or at any age when their changes are in HEAD (a squash merge,
    ``gitstate.squashed_into``): their memories stay hidden; the review queue offers to promote
    them.  Each: ``{"branch", "memories", "newest", "squashed"}``, newest first."""
    from datetime import timedelta

    view = view_of(project, "current")
    if view is None:
        return []
    age = float(project.config.branch_memory_days if days is None else days)
    candidates: dict[str, bool] = {}
    for name in BRANCH_TABLES:
        for b, c in learned_pairs(project, name):
            if b is None or b == view.branch:
                continue
            if b not in candidates:
                candidates[b] = gitstate.branch_tip(view.dirs, b) is None and not view.log(b)
            if candidates[b] and c is not None and c in view.ancestry:
                candidates[b] = False  # its work reached HEAD: merged, then deleted
    gone = sorted(b for b, is_gone in candidates.items() if is_gone)
    if not gone:
        return []
    found: dict[str, dict[str, Any]] = {}
    for name in BRANCH_TABLES:
        table = project.db.open_table(name)
        if table is None:
            continue
        cond = f"branch IN ({', '.join(sql_str(b) for b in gone)})"

        def read_newest(t: "Table" = table, c: str = cond) -> list[dict[str, Any]]:
            return t.search().where(c).select(["branch", "commit", "created_at"]).limit(None).to_list()

        for row in project.db.read(read_newest):
            entry = found.setdefault(row["branch"], {"branch": row["branch"], "memories": 0, "newest": None})
            entry["memories"] += 1
            if entry["newest"] is None or row["created_at"] > entry["newest"]:
                entry["newest"], entry["commit"] = row["created_at"], row.get("commit")
    cutoff = datetime.now(timezone.utc) - timedelta(days=age)
    for e in found.values():
        tip = e.pop("commit", None)
        e["squashed"] = bool(tip and view.commit and gitstate.squashed_into(view.root, view.dirs, tip, view.commit))
    out = [e for e in found.values() if e["newest"] is not None and (e["squashed"] or e["newest"] <= cutoff)]
    out.sort(key=lambda e: e["newest"], reverse=True)
    return [
        {"branch": e["branch"], "memories": e["memories"], "newest": e["newest"].isoformat(), "squashed": e["squashed"]}
        for e in out
    ]


# -- recall's use -----------------------------------------------------------------------------------
def showing(project: "Project") -> bool:
    return project.config.branch_memory == "show"


def recall_wheres(
    project: "Project", choice: str, wheres: dict[str, str | None], *, unasked: bool = False
) -> dict[str, str | None]:
    """Recall's filters with the branch rule added to each memory table's (none with ``any``, or
    with ``branch_memory: "show"``, where ``mark_unmerged`` labels what the rule would leave out).
    ``unasked``: the prompt hook's recall, which injects what nobody asked for: never shown there."""
    if choice == "any" or (showing(project) and choice == "current" and not unasked):
        return wheres
    view = view_of(project, choice)
    out = dict(wheres)
    for name, base in wheres.items():
        rule = where(project, name, view)
        if rule is not None:
            out[name] = f"{base} AND {rule}" if base else rule
    return out


def mark_unmerged(project: "Project", choice: str, rows: list[MemoryRow], results: list[RecalledItem]) -> None:
    """With ``branch_memory: "show"``: each result of a branch the checkout has not merged says so
    (``"branch_note": "from feature/x, not merged"``).  ``rows`` are the results' stored rows."""
    if choice != "current" or not showing(project):
        return
    view = view_of(project, choice)
    for row, result in zip(rows, results, strict=False):
        if result.get("collection") in BRANCH_TABLES and (text := note(view, row)):
            result["branch_note"] = text
