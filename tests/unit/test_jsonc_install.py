"""VS Code's ``mcp.json`` is JSON with comments and trailing commas (issue 23 c): ``install mcp --host
vscode`` adds our server to such a file as text (the user's comments, servers and layout kept),
uninstall takes exactly it out again, and a file that cannot be read is refused with nothing
changed.  Every edit is checked by parsing its result (``hosts.install.jsonc``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextware.cli import run
from contextware.hosts.install import jsonc

USERS = """{
  // my servers
  "servers": {
    /* the database, local only */
    "db": {"type": "stdio", "command": "db-mcp", "args": ["--ro",],}, // keep read-only
  },
  "inputs": [],
}
"""


@pytest.fixture
def vscode(project_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (project_dir / ".git").mkdir()
    path = project_dir / ".vscode" / "mcp.json"
    path.parent.mkdir()
    path.write_text(USERS)
    monkeypatch.chdir(project_dir)
    return path


def test_install_into_a_jsonc_mcp_json_keeps_comments_and_servers(vscode: Path, capsys):
    assert run("install", ["mcp", "--host", "vscode", "--project"]) == 0, capsys.readouterr().out
    text = vscode.read_text()
    for kept in ("// my servers", "/* the database, local only */", "// keep read-only", '"args": ["--ro",],}'):
        assert kept in text
    servers = jsonc.loads(text)["servers"]
    assert servers["db"] == {"type": "stdio", "command": "db-mcp", "args": ["--ro"]}
    assert servers["contextware"]["command"] == "contextware" and servers["contextware"]["type"] == "stdio"
    assert run("install", ["mcp", "--host", "vscode", "--project"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["changed"] is False  # again: nothing to do

    vscode.write_text(vscode.read_text().replace('"inputs": [],', '"inputs": [], // edited after install'))
    assert run("install", ["uninstall", "mcp", "--host", "vscode", "--project"]) == 0
    assert vscode.read_text() == USERS.replace('"inputs": [],', '"inputs": [], // edited after install')


def test_an_unreadable_mcp_json_is_refused_and_left_as_it_was(vscode: Path, capsys):
    broken = USERS.replace('"inputs": [],', '"inputs": [,')
    vscode.write_text(broken)
    capsys.readouterr()
    assert run("install", ["mcp", "--host", "vscode", "--project"]) == 1  # settings_unreadable
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "settings_unreadable" and "Nothing was changed" in error["message"], error
    assert "hooks" not in error["message"] and "\n" not in error["message"]
    assert vscode.read_text() == broken


@pytest.mark.parametrize(
    "text",
    [
        "{}",
        "{\n  // nothing yet\n}\n",
        '{"servers": {}}',
        '{"servers": {"a": 1}}',
        '{\n\t"servers": {\n\t\t"a": 1, // one\n\t},\n}\n',
        '{"servers": {"contextware": {"command": "old"}, "b": 2,}, /* end */}',
    ],
)
def test_jsonc_set_then_remove_gives_back_the_users_data(text: str):
    entry = {"type": "stdio", "command": "contextware", "args": ["mcp"]}
    added = jsonc.set_member(text, "servers", "contextware", entry)
    data = jsonc.loads(added)
    assert data["servers"]["contextware"] == entry
    before = jsonc.loads(text) or {}
    assert {k: v for k, v in data["servers"].items() if k != "contextware"} == {
        k: v for k, v in (before.get("servers") or {}).items() if k != "contextware"
    }
    removed = jsonc.loads(jsonc.remove_member(added, "servers", "contextware"))
    assert "contextware" not in removed["servers"]


@pytest.mark.parametrize("text", ['{"a": 1', '{"a": /* never closed', '{"a": "x}', "[1, 2]", '{"a": nope}'])
def test_what_is_not_jsonc_is_an_error_never_a_guess(text: str):
    with pytest.raises(jsonc.JsoncError):
        jsonc.set_member(text, "servers", "contextware", {"command": "x"})


def test_uninstall_never_leaves_our_hooks_in_a_settings_file_given_comments_later(project_dir: Path, capsys):
    """Hooks are never edited as text: a project's Gemini settings that got a comment after install
    are refused by uninstall (nothing changed), not stripped of our MCP server alone."""
    import sys

    (project_dir / ".git").mkdir()
    root = ["--project-root", str(project_dir)]
    settings = project_dir / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"ui": {"theme": "Dracula"}}\n')  # the user's own settings, plain JSON
    assert run("install", ["gemini", "--project", "--python", sys.executable, *root]) == 0
    commented = "// mine\n" + settings.read_text()
    settings.write_text(commented)
    capsys.readouterr()
    assert run("install", ["uninstall", "gemini", "--project", *root]) == 1
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "settings_unreadable"
    assert settings.read_text() == commented


@pytest.mark.parametrize("hooks_config", ['"off"', "[false]", "false", '{"enabled": false}'])
def test_gemini_settings_with_any_hooks_config_install_cleanly(
    project_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys, hooks_config: str
):
    """A project's .gemini/settings.json whose ``hooksConfig`` is not an object (a hand edit) is
    installed into like any other; only ``{"enabled": false}`` earns the warning that hooks are off."""
    (project_dir / ".git").mkdir()
    settings = project_dir / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(f'{{"hooksConfig": {hooks_config}}}\n')
    monkeypatch.chdir(project_dir)
    assert run("install", ["gemini", "--project"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] is True, out
    warned = any("hooksConfig.enabled" in w for w in out.get("warnings", []))
    assert warned == (hooks_config == '{"enabled": false}')
    assert json.loads(settings.read_text())["hooksConfig"] == json.loads(hooks_config)


@pytest.mark.slow
@pytest.mark.parametrize("hooks", ['["x"]', '"off"', '{"SessionStart": "x"}', '{"SessionStart": [{"hooks": "x"}]}'])
def test_doctor_reads_hand_edited_hook_settings_without_failing(
    project_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys, hooks: str
):
    """``doctor`` looks for our hooks in every host's settings file; one whose ``hooks`` (or an
    MCP server's ``args``) is not what a host writes holds none of ours, and doctor says so."""
    (project_dir / ".git").mkdir()
    for folder in (".claude", ".gemini"):
        (project_dir / folder).mkdir()
        (project_dir / folder / "settings.json").write_text(f'{{"hooks": {hooks}}}\n')
    (project_dir / ".mcp.json").write_text('{"mcpServers": {"contextware": {"command": "true", "args": "x"}}}\n')
    monkeypatch.chdir(project_dir)
    monkeypatch.setenv("CONTEXTWARE_SERVICE", "off")
    run("doctor", [])
    out = json.loads(capsys.readouterr().out)
    assert out.get("error", {}).get("code") != "internal_error", out
    assert "checks" in out, out
