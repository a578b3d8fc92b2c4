"""watch.py notices a checkout: a real watch process in a real git repository logs the branch it
moved to and re-crawls, re-using the summaries of content it indexed before."""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from contextware.codeindex.indexer import crawl
from contextware.storage.project import Project
from tests.support.branch_git import git, new_repo
from tests.support.repo import SCRIPTS


def test_watch_recrawls_after_a_checkout(tmp_path: Path) -> None:
    root = new_repo(tmp_path / "repo")
    (root / "app.py").write_text("def main_side():\n    return 1\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "app")
    git(root, "checkout", "-q", "-b", "feature/x")
    (root / "app.py").write_text("def feature_side():\n    return 2\n")
    git(root, "commit", "-q", "-am", "feature")
    git(root, "checkout", "-q", "main")
    crawl(Project.open(root), summarizer="local")  # main indexed once, as a user starts

    proc = subprocess.Popen(
        [sys.executable, str(SCRIPTS / "watch.py"), "--summarizer", "local", "--debounce-ms", "400"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    seen: list[str] = []

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.put(line.rstrip("\n"))

    def wait_for(text: str, timeout: float = 90) -> str:
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                line = lines.get(timeout=0.2)
            except queue.Empty:
                continue
            seen.append(line)
            if text in line:
                return line
        raise AssertionError(f"no line with {text!r} within {timeout}s; saw: {seen}")

    threading.Thread(target=pump, daemon=True).start()
    try:
        wait_for("watching")
        time.sleep(1.0)  # the watch is set up just after it says so
        git(root, "checkout", "-q", "feature/x")
        wait_for("checked out feature/x")
        first = wait_for("re-crawled after the checkout")
        assert "1 indexed (0 summaries re-used)" in first, first
        git(root, "checkout", "-q", "main")
        wait_for("checked out main")
        back = wait_for("re-crawled after the checkout")
        assert "1 indexed (1 summaries re-used)" in back, back
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
