"""`--format text` for people, arguments checked in the parser, settings checked on load."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from contextware.cli import COMMANDS, emit, main, run
from contextware.cli import render as r
from contextware.core.errors import UsageError
from contextware.storage.config import load_config

ANSI = re.compile(r"\x1b\[[0-9;]*m")


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_without_no_color(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr("sys.stdout", io.StringIO())
    assert r.paint("x", "red") == "x"
    monkeypatch.setattr("sys.stdout", _Tty())
    assert r.paint("x", "red") == "\x1b[31mx\x1b[0m"
    monkeypatch.setenv("NO_COLOR", "1")
    assert r.paint("x", "red") == "x"


def test_table_aligns_columns_and_wraps_the_last(monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    rows = [{"id": "fact-1", "n": 5, "text": "short"}, {"id": "fact-22", "n": 120, "text": "word " * 30}]
    lines = r.table(rows, ["id", "n", "text"]).splitlines()
    assert lines[0].split() == ["ID", "N", "TEXT"]
    assert lines[1].index("short") == lines[2].index("word") == lines[0].index("TEXT")
    assert lines[1].index("5") == lines[2].index("120") + 2  # numbers right-aligned
    assert len(lines) > 3 and all(len(line) <= 60 for line in lines)
    assert all(line.startswith(" " * lines[0].index("TEXT")) for line in lines[3:])


def test_no_command_prints_json_in_text_mode(monkeypatch, capsys):
    """The generic rendering: nested objects and lists of objects, never a JSON dump."""
    result = {
        "ok": True,
        "project_root": "/p",
        "tables": {"facts": {"rows": 3, "model": "m"}},
        "records": [{"id": "fact-1", "text": "We use uv."}],
        "flag": True,
    }
    emit(result, "text", None)
    out = capsys.readouterr().out
    assert "{" not in out and '"' not in out
    assert re.search(r"^project_root\s+/p$", out, re.M) and "We use uv." in out and "yes" in out


def test_every_command_has_a_text_rendering_or_the_generic_one():
    import importlib

    for command, module in COMMANDS.items():
        mod = importlib.import_module(f"contextware.cli.{module}")
        text = Path(mod.__file__).read_text()
        # A stored JSON value (store load) is shown as JSON; a whole result never is.
        assert not re.search(r"json\.dumps\(result\b(?!\[)", text), f"{command} renders text as JSON"


def test_version_everywhere(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0 and capsys.readouterr().out.startswith("contextware ")
    for command in COMMANDS:
        with pytest.raises(SystemExit) as exited:
            run(command, ["--version"])
        assert exited.value.code == 0, command
        assert capsys.readouterr().out.startswith("contextware "), command


@pytest.mark.parametrize(
    "command, argv, code, words",
    [
        ("recall", [], "usage", "Give a question"),
        ("recall", ["a", "--query", "b"], "usage", "not both"),
        ("recall", ["q", "--limit", "many"], "usage", "invalid int value"),
        ("save", ["--type", "episode", "x"], "missing_goal", "--goal"),
        ("save", ["--type", "episode", "--goal", "g", "x"], "missing_result", "--result"),
        ("memory", ["history"], "usage", "required"),
        ("export", ["--bogus"], "usage", "Unrecognized arguments"),
        ("config", ["edit"], "usage", "invalid choice"),
    ],
)
def test_a_missing_or_wrong_argument_exits_2_with_one_sentence(
    command, argv, code, words, capsys, project_dir, monkeypatch
):
    monkeypatch.chdir(project_dir)
    assert run(command, argv) == 2
    out = capsys.readouterr().out
    err = json.loads(out)["error"]
    assert err["code"] == code and words in err["message"] and "\n" not in err["message"]
    assert not (project_dir / "contextware_data").exists()


def test_unknown_and_mistyped_settings_exit_2_naming_the_nearest_key(tmp_path):
    (tmp_path / "config.json").write_text('{"sumarizer": "local"}')
    with pytest.raises(UsageError, match="did you mean 'summarizer'") as caught:
        load_config(tmp_path)
    assert caught.value.code == "unknown_setting" and caught.value.exit_code == 2
    (tmp_path / "config.json").write_text('{"zzzz": 1}')
    with pytest.raises(UsageError, match="contextware config"):
        load_config(tmp_path)
    (tmp_path / "config.json").write_text('{"max_fact_chars": "lots"}')
    with pytest.raises(UsageError, match=r"max_fact_chars in .* must be a whole number") as caught:
        load_config(tmp_path)
    assert caught.value.code == "bad_config"
    (tmp_path / "config.json").write_text('{"cache_ttl_days": null, "similar_threshold": 1, "summarizer": "local"}')
    assert load_config(tmp_path).summarizer == "local"


def test_config_show_and_check(project_dir, monkeypatch, capsys):
    monkeypatch.chdir(project_dir)
    data = project_dir / "contextware_data"
    data.mkdir()
    (data / "config.json").write_text('{"summarizer": "local"}')
    assert run("config", ["--format", "text"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^summarizer\s+config\.json\s+local$", out, re.M)
    assert re.search(r"^max_fact_chars\s+default\s+4000$", out, re.M)
    assert run("config", ["check"]) == 0
    assert json.loads(capsys.readouterr().out)["overridden"] == ["summarizer"]
    (data / "config.json").write_text('{"summarizer": "local", "hook_prompt_token": 9}')
    assert run("config", ["check"]) == 2
    assert "did you mean 'hook_prompt_tokens'" in json.loads(capsys.readouterr().out)["error"]["message"]


def test_unknown_command_suggests_the_nearest(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["recal"])
    assert exited.value.code == 2
    assert "Did you mean 'recall'?" in json.loads(capsys.readouterr().out)["error"]["message"]


def test_on_a_terminal_our_colours_pass_and_stored_escapes_do_not(monkeypatch, capsys):
    """emit cleans every text output: a stored clear-screen, title or concealing sequence is dropped,
    the styles ``paint`` adds survive when colour is on."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr(r.sys, "stdout", _Tty())
    stored = "deploy\x1b[2J\x1b]0;pwned\x07 now \x1b[8mhidden\x1b[0m"
    emit({"text": stored}, "text", lambda res: r.paint("note", "bold", "red") + " " + res["text"])
    out = r.sys.stdout.getvalue()
    assert out.startswith("\x1b[1;31mnote\x1b[0m ")
    assert "\x1b[2J" not in out and "pwned" not in out and "\x1b[8m" not in out and "hidden" in out
