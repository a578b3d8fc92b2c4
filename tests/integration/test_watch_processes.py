"""watch.py as a real subprocess with real file changes."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from contextware.codeindex.indexer import crawl
from contextware.storage.project import Project
from tests.support.code_index import indexed
from tests.support.repo import SCRIPTS


class Watcher:
    def __init__(self, root: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(SCRIPTS / "watch.py"), "--summarizer", "local", "--debounce-ms", "400"],
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, text: str, timeout: float = 60) -> str:
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                continue
            self.seen.append(line)
            if text in line:
                return line
        raise AssertionError(f"no line with {text!r} within {timeout}s; saw: {self.seen}")

    def drain(self, seconds: float) -> list[str]:
        end = time.time() + seconds
        while time.time() < end:
            try:
                self.seen.append(self.lines.get(timeout=0.1))
            except queue.Empty:
                pass
        return self.seen

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, dict]:
        self.proc.send_signal(sig)
        out, _ = self.proc.communicate(timeout=30)
        return self.proc.returncode, json.loads(out)


def test_watch_reindexes_changes_removes_deletions_and_stops_cleanly(project_dir: Path):
    (project_dir / "app.py").write_text("def first():\n    pass\n")
    (project_dir / "gone.py").write_text("def doomed():\n    pass\n")
    (project_dir / ".gitignore").write_text("ignored/\n")
    crawl(Project.open(project_dir), summarizer="local")
    w = Watcher(project_dir)
    try:
        w.wait_for("watching")
        time.sleep(0.5)
        # a save storm: many writes of one file in quick succession are one re-index
        for i in range(15):
            (project_dir / "app.py").write_text(f"def first():\n    pass\n\ndef second_{i}():\n    pass\n")
            time.sleep(0.01)
        w.wait_for("indexed app.py")
        (project_dir / "gone.py").unlink()
        w.wait_for("removed gone.py")
        (project_dir / "ignored").mkdir()
        (project_dir / "ignored" / "skip.py").write_text("def hidden():\n    pass\n")
        (project_dir / "new.py").write_text("def brand_new():\n    pass\n")
        w.wait_for("indexed new.py")
        (project_dir / ".contextwareignore").write_text("new.py\n")
        w.wait_for("ignore rules changed")
        seen = w.drain(1.0)
        code, totals = w.stop()
    finally:
        if w.proc.poll() is None:
            w.proc.kill()
    assert code == 0 and totals["ok"] is True
    assert sum("indexed app.py" in line for line in seen) == 1, seen
    assert not any("skip.py" in line for line in seen)
    assert not any("contextware_data" in line for line in seen)
    rows = indexed(project_dir)
    assert "app.py" in rows and "new.py" not in rows  # newly ignored: removed by the re-crawl
    assert "second_14" in rows["app.py"]
    assert "gone.py" not in rows and "ignored/skip.py" not in rows
    assert totals["indexed"] >= 2 and totals["removed"] == 2


def test_watch_stops_on_sigint_with_totals(project_dir: Path):
    (project_dir / "a.py").write_text("x = 1\n")
    w = Watcher(project_dir)
    try:
        w.wait_for("watching")
        code, totals = w.stop(signal.SIGINT)
    finally:
        if w.proc.poll() is None:
            w.proc.kill()
    assert code == 0 and totals["ok"] is True and totals["batches"] == 0
    assert "Traceback" not in "\n".join(w.seen)
    assert os.path.isdir(project_dir / "contextware_data")


def test_watch_follows_folders_moved_out_of_and_into_the_project(project_dir: Path):
    """A folder moved away (or in) is one event for the folder alone, none for its files."""
    pkg = project_dir / "pkg"
    pkg.mkdir()
    (pkg / "one.py").write_text("def one():\n    pass\n")
    (pkg / "sub").mkdir()
    (pkg / "sub" / "two.py").write_text("def two():\n    pass\n")
    (project_dir / "keep.py").write_text("def keep():\n    pass\n")
    crawl(Project.open(project_dir), summarizer="local")
    outside = project_dir.parent / "elsewhere"
    arriving = project_dir.parent / "arriving"
    arriving.mkdir()
    (arriving / "three.py").write_text("def three():\n    pass\n")
    w = Watcher(project_dir)
    try:
        w.wait_for("watching")
        time.sleep(0.5)
        os.rename(pkg, outside)
        w.wait_for("removed pkg/sub/two.py")
        os.rename(arriving, project_dir / "lib")
        w.wait_for("indexed lib/three.py")
        code, totals = w.stop()
    finally:
        if w.proc.poll() is None:
            w.proc.kill()
    assert code == 0 and totals["ok"] is True
    assert any("removed pkg/one.py" in line for line in w.seen), w.seen
    assert set(indexed(project_dir)) == {"keep.py", "lib/three.py"}


def test_a_memory_naming_a_file_is_flagged_after_one_watch_event(project_dir: Path):
    """memory.code_links with a real watch process: an edit, then a rename, each seen by one batch."""
    from datetime import datetime, timezone

    from contextware.memory import edits, records
    from contextware.memory.recall import ask

    (project_dir / "src").mkdir()
    (project_dir / "src" / "retry.py").write_text("def backoff_delay(attempt):\n    return 2**attempt\n")
    project = Project.open(project_dir)
    crawl(project, summarizer="local")
    fact = records.save_fact(project, "The retry policy lives in `src/retry.py`.", kind="decision")["id"]
    today = datetime.now(timezone.utc).strftime("%Y-%m-%d")

    def flag() -> str | None:
        hits = ask(Project.open(project_dir), "where does the retry policy live?")["results"]
        return next(h.get("may_be_stale") for h in hits if h["id"] == fact)

    w = Watcher(project_dir)
    try:
        w.wait_for("watching")
        time.sleep(0.5)
        assert flag() is None
        (project_dir / "src" / "retry.py").write_text("def backoff_delay(attempt):\n    return 3**attempt\n")
        w.wait_for("indexed src/retry.py")
        assert flag() == f"src/retry.py changed on {today}"
        edits.confirm(project, fact)
        assert flag() is None
        os.rename(project_dir / "src" / "retry.py", project_dir / "src" / "retries.py")
        w.wait_for("removed src/retry.py")  # in one batch, after "indexed src/retries.py" or before it
        if not any("indexed src/retries.py" in line for line in w.seen):
            w.wait_for("indexed src/retries.py")
        assert flag() == f"src/retry.py moved to src/retries.py on {today}"
        code, _ = w.stop()
    finally:
        if w.proc.poll() is None:
            w.proc.kill()
    assert code == 0
