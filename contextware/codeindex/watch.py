"""Watch mode: keep the code index fresh while files change.

watchfiles groups the events of a burst (an editor's atomic save, a formatter touching many files, a
``git checkout``) into one batch once the tree has been quiet for ``step`` ms (at most ``debounce``
ms), so a save storm becomes one re-index of each file it touched.  Each batch goes through
``code_index.index_files``, the same path as ``index_file.py``: unchanged content is not
re-summarised, deleted files leave the index.  Every ``compact_every_s`` seconds with writes the table
is compacted.  SIGINT and SIGTERM stop the loop between batches.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from contextware.core.system import stop_on_signals
from contextware.storage.schemas import CHUNKS_TABLE, CODE_TABLE

IGNORE_FILES = (".gitignore", ".contextwareignore", ".gitattributes")

if TYPE_CHECKING:
    from contextware.storage.project import Project


def _logger(stream: TextIO) -> Callable[[str], None]:
    def log(message: str) -> None:
        stream.write(f"{time.strftime('%H:%M:%S')} {message}\n")
        stream.flush()

    return log


def watch(
    project: "Project",
    *,
    summarizer: str = "auto",
    debounce_ms: int = 1600,
    step_ms: int = 100,
    compact_every_s: float = 600.0,
    stop_event: threading.Event | None = None,
    log: Callable[[str], None] | None = None,
    ready: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Watch until ``stop_event`` is set (or SIGINT/SIGTERM in the main thread); returns totals."""
    from watchfiles import Change
    from watchfiles import watch as watch_changes

    from contextware.codeindex.files import IgnoreRules, restored_reasons
    from contextware.codeindex.indexer import check_summarizer

    summarizer = check_summarizer(summarizer)
    log = log or _logger(sys.stderr)
    stop = stop_event or threading.Event()
    root = project.root.resolve()
    # reloaded when an ignore file changes
    rules = [IgnoreRules.load(project.root, project.data_dir, restored_reasons(project.config))]
    data_dir = project.data_dir.resolve()
    restore = stop_on_signals(stop)
    totals = {"batches": 0, "indexed": 0, "removed": 0, "skipped": 0, "failed": 0, "compactions": 0}
    started = time.monotonic()
    last_compact, dirty = time.monotonic(), False

    from contextware.storage import gitstate

    dirs = gitstate.git_dirs(root)
    head_file = dirs.git / "HEAD" if dirs is not None and root in dirs.git.parents else None  # not a worktree's

    def wanted(_change: object, path: str) -> bool:
        p = Path(path)
        if head_file is not None and p == head_file:
            return True  # a checkout: the branch changed
        if p == data_dir or data_dir in p.parents:
            return False
        try:
            rel = p.relative_to(root).as_posix()
        except ValueError:
            return False
        if p.name in IGNORE_FILES:
            return True
        # Built-in exclusions only: .gitignore rules are checked per batch by index_files (with
        # git that is one process per batch instead of one per event).
        return rules[0].builtin_reason(rel, is_dir=p.is_dir()) is None

    project.ensure_data_dir()
    log(f"watching {root} (summarizer {summarizer}); Ctrl-C to stop")
    if ready:
        ready()
    try:
        for changes in watch_changes(
            root,
            watch_filter=wanted,
            debounce=debounce_ms,
            step=step_ms,
            stop_event=stop,
            raise_interrupt=False,
            yield_on_timeout=True,
            rust_timeout=1000,
        ):
            if changes and head_file is not None and any(Path(p) == head_file for _, p in changes):
                # A checkout: the files it changed arrive as events too, but a large one can outrun
                # them; crawl the whole project (unchanged files cost a stat, content summarised on
                # any branch before is re-used: codeindex.by_content).
                now = gitstate.head(root)
                log(f"checked out {now.branch or (now.commit or '')[:12] or 'an unborn branch'}")
                dirty |= _recrawl(project, summarizer, totals, log, stop, checkout=True)
                changes = set()
            if changes:
                if any(Path(p).name in IGNORE_FILES for _, p in changes):
                    # New rules change which files belong in the index, not only the changed ones.
                    rules[0] = IgnoreRules.load(project.root, project.data_dir, restored_reasons(project.config))
                    dirty |= _recrawl(project, summarizer, totals, log, stop)
                paths = sorted({p for _, p in changes if not os.path.isdir(p)})
                if paths:
                    dirty |= _reindex(project, paths, summarizer, totals, log, stop)
                # A folder moved in arrives as one event for the folder alone: crawl it.
                folders = sorted({p for change, p in changes if change == Change.added and os.path.isdir(p)})
                if folders and not stop.is_set():
                    dirty |= _recrawl(project, summarizer, totals, log, stop, folders)
            if dirty and time.monotonic() - last_compact >= compact_every_s:
                project.db.compact(CODE_TABLE)
                project.db.compact(CHUNKS_TABLE)
                totals["compactions"] += 1
                log("compacted the code index")
                last_compact, dirty = time.monotonic(), False
            if stop.is_set():
                break
    finally:
        restore()
    log("stopped")
    return {**totals, "elapsed_s": round(time.monotonic() - started, 3)}


def _reindex(
    project: "Project",
    paths: list[str],
    summarizer: str,
    totals: dict[str, Any],
    log: Callable[[str], None],
    stop: threading.Event,
) -> bool:
    from contextware.codeindex.indexer import CrawlInterrupted, index_files
    from contextware.core.errors import ContextwareError

    totals["batches"] += 1
    try:
        report = index_files(project, paths, summarizer=summarizer)
    except CrawlInterrupted:  # the signal reached the batch's own handler: it means stop watching
        stop.set()
        return True
    except ContextwareError as exc:
        log(f"error: {exc.message}")
        totals["failed"] += len(paths)
        return False
    for path in report["indexed_files"]:
        log(f"indexed {path}")
    for path in report["removed_files"]:
        log(f"removed {path}")
    for s in report["skipped_files"]:
        if s["reason"] not in ("missing", "ignored"):  # an ignored file's change is not news
            log(f"skipped {s['path']} ({s['reason']})")
    for f in report["failures"]:
        log(f"failed {f['path']}: {f['error']}")
    totals["indexed"] += report["indexed"]
    totals["removed"] += report["removed"]
    totals["skipped"] += report["skipped"]
    totals["failed"] += report["failed"]
    return bool(report["indexed"] or report["removed"])


def _recrawl(
    project: "Project",
    summarizer: str,
    totals: dict[str, Any],
    log: Callable[[str], None],
    stop: threading.Event,
    folders: list[str] | None = None,
    checkout: bool = False,
) -> bool:
    """The whole project when ignore rules changed or a checkout moved HEAD, else the given folders."""
    from contextware.codeindex.indexer import CrawlInterrupted, crawl
    from contextware.core.errors import ContextwareError

    try:
        report = crawl(project, folders, summarizer=summarizer)
    except CrawlInterrupted:
        stop.set()
        return True
    except ContextwareError as exc:
        log(f"error: {exc.message}")
        return False
    if folders:
        for path in report["indexed_files"]:
            log(f"indexed {path}")
    elif checkout:
        reused = report.get("reused_summaries", 0)
        log(
            f"re-crawled after the checkout: {report['indexed']} indexed ({reused} summaries re-used), {report['removed']} removed"
        )
    else:
        log(f"ignore rules changed: re-crawled, {report['indexed']} indexed, {report['removed']} removed")
    totals["indexed"] += report["indexed"]
    totals["removed"] += report["removed"]
    return bool(report["indexed"] or report["removed"])
