"""Where memory may be written (issue 23 a, b): a ``contextware_data`` that is a symlink out of the
project is refused unless ``CONTEXTWARE_DATA_DIR`` names it, and the home folder (or ``/``) is never
taken for a project silently: ``~/contextware_data`` is not created unless asked for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextware.cli import run
from contextware.hosts.hooks.handlers import run_hook


def _save(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict]:
    code = run("save", ["We deploy on Fridays", *extra])
    return code, json.loads(capsys.readouterr().out)


def _one_sentence(out: dict, code: str) -> str:
    error = out["error"]
    assert error["code"] == code and "\n" not in error["message"], error
    return error["message"]


@pytest.fixture
def linked_out(project_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (project_dir / ".git").mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (project_dir / "contextware_data").symlink_to(outside)
    monkeypatch.chdir(project_dir)
    return outside


def test_a_data_dir_linked_out_of_the_project_is_refused(linked_out: Path, capsys: pytest.CaptureFixture[str]):
    code, out = _save(capsys)
    assert code == 2
    message = _one_sentence(out, "data_dir_outside_project")
    assert "CONTEXTWARE_DATA_DIR" in message and str(linked_out) in message
    assert list(linked_out.iterdir()) == []  # nothing written there
    assert run("recall", ["--query", "deploy"]) == 2  # reads are refused as well: never someone else's memory
    capsys.readouterr()


def test_a_hook_in_such_a_project_fails_open_and_writes_nothing(project_dir: Path, linked_out: Path):
    event = {"session_id": "s", "cwd": str(project_dir), "hook_event_name": "AfterAgent", "prompt": "hi there"}
    assert run_hook(json.dumps({**event, "prompt_response": "an answer"})) == ""
    assert not (linked_out / "lancedb").exists()


def test_the_linked_data_dir_is_used_when_named(linked_out: Path, monkeypatch, capsys):
    monkeypatch.setenv("CONTEXTWARE_DATA_DIR", str(linked_out))
    code, out = _save(capsys)
    assert code == 0 and out["written"] == 1
    assert (linked_out / "lancedb").is_dir()


def test_a_data_dir_linked_inside_the_project_is_fine(project_dir: Path, monkeypatch, capsys):
    (project_dir / ".git").mkdir()
    (project_dir / ".memory").mkdir()
    (project_dir / "contextware_data").symlink_to(project_dir / ".memory")
    monkeypatch.chdir(project_dir)
    code, out = _save(capsys)
    assert code == 0 and out["written"] == 1 and (project_dir / ".memory" / "lancedb").is_dir()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(home)
    return home


def test_the_home_folder_is_not_taken_for_a_project(home: Path, capsys: pytest.CaptureFixture[str]):
    code, out = _save(capsys)
    assert code == 2
    message = _one_sentence(out, "no_project")
    assert "not a project" in message and "--project-root" in message
    assert not (home / "contextware_data").exists()
    assert run("recall", ["--query", "deploy"]) == 0  # reading creates nothing, and answers
    assert not (home / "contextware_data").exists()
    capsys.readouterr()


@pytest.mark.parametrize("how", ["flag", "env", "existing", "git"])
def test_the_home_folder_is_a_project_when_chosen(home: Path, how: str, monkeypatch, capsys):
    extra: tuple[str, ...] = ()
    if how == "flag":
        extra = ("--project-root", str(home))
    elif how == "env":
        monkeypatch.setenv("CONTEXTWARE_PROJECT_ROOT", str(home))
    elif how == "existing":
        (home / "contextware_data").mkdir()  # made on purpose earlier: used as it is
    else:
        (home / ".git").mkdir()  # a dotfiles repository
    code, out = _save(capsys, *extra)
    assert code == 0 and out["written"] == 1
    assert (home / "contextware_data" / "lancedb").is_dir()
