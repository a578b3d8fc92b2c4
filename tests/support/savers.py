"""Processes that save facts at once: each with its own data dir (a machine of its own, with its own
lock folder) or all in one project; tests/integration/test_s3.py and test_same_text_races.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys

SAVER = """
import json, sys
from contextware.memory.records import save_fact
from contextware.storage.project import Project
project = Project.open(sys.argv[1])
ids = []
for text in sys.argv[2:]:
    ids.append(save_fact(project, text)["id"])
print(json.dumps(ids))
"""


def savers(
    tmp_path, env: dict[str, str], texts_per_process: list[list[str]], config: dict | None = None, one_root=None
) -> list[list[str]]:
    """Start one process per list of texts at once, each with its own data dir (lock folder, and
    ``config`` as its config.json), or all in the project ``one_root``; returns the ids each save
    answered with."""
    procs = []
    for i, texts in enumerate(texts_per_process):
        root = one_root or tmp_path / f"machine-{i}"
        full = {**os.environ, **env}
        if one_root is None:
            (root / "contextware_data").mkdir(parents=True)
            if config:
                (root / "contextware_data" / "config.json").write_text(json.dumps(config))
            full["CONTEXTWARE_DATA_DIR"] = str(root / "contextware_data")
        command = [sys.executable, "-c", SAVER, str(root), *texts]
        procs.append(subprocess.Popen(command, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results
