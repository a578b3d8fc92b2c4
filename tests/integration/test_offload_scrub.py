"""Offload files written before the redaction layer (answers, summaries, prompts, error notes with
secrets in them, and an index built from them) are re-redacted by ``memory.py repair``, and the
index is rebuilt from the scrubbed files; a second repair changes nothing.  The offloads are made by
the real code with a tiny fake ``gemini`` (tests/offload_helpers.py), then their files are given the
secrets an older version would have stored."""

from __future__ import annotations

import json
import os

from contextware.offload.run import offload
from contextware.offload.sync import sync
from contextware.settings import Settings
from contextware.storage.project import Project
from tests import secret_corpus as sc
from tests.conftest import run_script
from tests.offload_helpers import fake_gemini, make_project, table_rows  # noqa: F401

PLANTED = [sc.GITHUB, sc.STRIPE, sc.SLACK, sc.NPM, sc.GITLAB, sc.HF, sc.OPENAI, sc.SENDGRID]


def _offload_text(project: Project) -> str:
    """Everything under the offloads folder, and every row of the index."""
    files = sorted(p for p in (project.data_dir / "offloads").rglob("*") if p.is_file())
    return "\n".join(p.read_text() for p in files) + json.dumps(table_rows(project), default=str)


def test_repair_rescrubs_offload_files_written_before_redaction(fake_gemini, make_project):
    project = make_project()
    once = offload(project, "What does app do?", files="src/app.py", topic="app")
    offload(project, "First question on routing.", session="routing")
    entry = (project.root / once["full_response_path"]).parent
    sdir = project.data_dir / "offloads" / "sessions" / "routing"
    turn_file = next(sdir.glob("full_response-*.md"))

    # What an older version stored: secrets in every text file and text field.
    (entry / "full_response.md").write_text(f"The app calls the API with {sc.GITHUB}.\nIt routes requests.\n")
    (entry / "summary.md").write_text(f"Uses the key {sc.STRIPE}.")
    meta = json.loads((entry / "metadata.json").read_text())
    meta["prompt"] = f"Why does {sc.SENDGRID} fail?"
    (entry / "metadata.json").write_text(json.dumps(meta, indent=2) + "\n")
    turn_file.write_text(f"Routing posts to Slack with {sc.SLACK}.\n")
    (sdir / "summary.md").write_text(f"Publishing uses {sc.NPM}.")
    state = json.loads((sdir / "session.json").read_text())
    state["turns"][0].update(prompt=f"Is {sc.GITLAB} still valid?", summary=f"The model is pulled with {sc.HF}.")
    state["last_error"] = f"Gemini said: invalid key {sc.OPENAI}"
    (sdir / "session.json").write_text(json.dumps(state, indent=2) + "\n")
    assert sync(project, "rebuild")["indexed"] == 3  # the index built from those files, as it was
    before = _offload_text(project)
    assert all(s in before for s in PLANTED)

    repaired = run_script("memory", "repair", cwd=project.root)
    assert repaired.returncode == 0, repaired.stdout
    assert repaired.json["secrets_scrubbed"]["offload_files"] == 6, repaired.json
    project = Project.open(project.root, Settings.from_env(os.environ))
    after = _offload_text(project)
    assert [s for s in PLANTED if s in after] == []
    assert "[REDACTED:" in (entry / "full_response.md").read_text()
    assert "It routes requests." in (entry / "full_response.md").read_text()  # the rest is kept
    assert json.loads((sdir / "session.json").read_text())["turns"][0]["prompt"].startswith("Is [REDACTED:")
    assert json.loads((entry / "metadata.json").read_text())["key"] == entry.name  # ids and hashes untouched
    assert sync(project, "check")["in_sync"] is True and len(table_rows(project)) == 3

    version = project.db.open_table("offloads").version
    again = run_script("memory", "repair", cwd=project.root)
    assert again.json["secrets_scrubbed"]["offload_files"] == 0
    assert (
        Project.open(project.root, Settings.from_env(os.environ)).db.open_table("offloads").version == version
    )  # not rebuilt again
    assert _offload_text(Project.open(project.root, Settings.from_env(os.environ))) == after
