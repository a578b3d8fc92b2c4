"""Two installs of one host (project and user scope) run our hook twice for each event: the second
identical invocation from the same host process prints nothing, so the model gets memory once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.repo import SCRIPTS
from tests.support.scripts import run_script


def test_two_installs_of_one_host_inject_the_briefing_once(project_dir: Path, tmp_path: Path):
    run_script("save_fact", "Releases go out on Fridays only.", "--kind", "constraint", cwd=project_dir)
    event = json.dumps({"hook_event_name": "SessionStart", "session_id": "s-twice", "cwd": str(project_dir)})
    temp = tmp_path / "user-tmp"
    temp.mkdir()
    hooks = [
        subprocess.Popen(
            [sys.executable, str(SCRIPTS / "hook.py"), "--host", "claude"],  # Gemini briefs on the first prompt
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=project_dir,
            env={**os.environ, "TMPDIR": str(temp)},
        )
        for _ in range(2)
    ]
    outs = [hook.communicate(event, timeout=120)[0] for hook in hooks]
    answered = [out for out in outs if out.strip()]
    assert len(answered) == 1 and "Fridays" in answered[0], outs
    assert list((temp / f"contextware-hooks-{os.getuid()}").iterdir())  # the marker is in the user's TMPDIR


def test_a_second_install_held_up_by_a_loaded_machine_still_stays_silent(project_dir: Path):
    """Both hooks are started together, but the second is starved (stopped, as a loaded machine
    would leave it) until seconds after the first answered: it is still the same moment."""
    import signal
    import time

    from contextware.hosts.hooks.once import WINDOW_S

    run_script("save_fact", "Releases go out on Fridays only.", "--kind", "constraint", cwd=project_dir)
    event = json.dumps({"hook_event_name": "SessionStart", "session_id": "s-starved", "cwd": str(project_dir)})
    argv = [sys.executable, str(SCRIPTS / "hook.py"), "--host", "claude"]
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "text": True, "cwd": project_dir}
    first, second = subprocess.Popen(argv, **pipes), subprocess.Popen(argv, **pipes)
    os.kill(second.pid, signal.SIGSTOP)
    try:
        start = time.monotonic()
        assert "Fridays" in first.communicate(event, timeout=120)[0]
        time.sleep(max(0.0, WINDOW_S + 1.0 - (time.monotonic() - start)))
    finally:
        os.kill(second.pid, signal.SIGCONT)
    assert second.communicate(event, timeout=120)[0] == ""


def test_an_event_that_was_answered_with_nothing_is_answered_when_sent_again(project_dir: Path, monkeypatch):
    """The claim is given back when a hook has nothing to say: a session start sent again by the same
    process, once a fact was saved, gets the briefing (the loop's smoke check: the first start of a
    new project had found no memory).  The window is widened so that the model's load fits in it."""
    from contextware.hosts.hooks import entry, once
    from contextware.hosts.hooks.event import with_host
    from contextware.memory import records
    from contextware.storage.project import Project

    monkeypatch.setattr(once, "WINDOW_S", 600.0)
    monkeypatch.chdir(project_dir)
    event = {"hook_event_name": "SessionStart", "session_id": "s-new", "cwd": str(project_dir)}
    start = with_host(json.dumps(event), "claude")
    assert entry.answer(start) == ""  # nothing remembered yet
    records.save_fact(Project.open(project_dir), "Releases go out on Fridays only.", kind="constraint")
    assert "Fridays" in entry.answer(start)
    assert entry.answer(start) == ""  # answered: the same event again within the window is a second install
