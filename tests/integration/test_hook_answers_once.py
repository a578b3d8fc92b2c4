"""Two installs of one host (project and user scope) run our hook twice for each event: the second
identical invocation from the same host process prints nothing, so the model gets memory once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.repo import SCRIPTS
from tests.support.scripts import run_script


def test_two_installs_of_one_host_inject_the_briefing_once(project_dir: Path):
    run_script("save_fact", "Releases go out on Fridays only.", "--kind", "constraint", cwd=project_dir)
    event = json.dumps({"hook_event_name": "SessionStart", "session_id": "s-twice", "cwd": str(project_dir)})
    hooks = [
        subprocess.Popen(
            [sys.executable, str(SCRIPTS / "hook.py"), "--host", "gemini"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=project_dir,
        )
        for _ in range(2)
    ]
    outs = [hook.communicate(event, timeout=120)[0] for hook in hooks]
    answered = [out for out in outs if out.strip()]
    assert len(answered) == 1 and "Fridays" in answered[0], outs
