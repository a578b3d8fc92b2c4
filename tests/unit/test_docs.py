"""SKILL.md and the README agree with the scripts' real options (checked against the parsers that
produce `--help`)."""

from __future__ import annotations

import argparse
import re

import pytest

from contextware.cli import COMMANDS
from tests.support.repo import REPO, SCRIPTS

SKILL = (REPO / "SKILL.md").read_text()
README = (REPO / "README.md").read_text()
# Scripts that are one-shot commands (hook.py and mcp_server.py are long-lived or event-driven).
SCRIPT_COMMAND = {
    p.stem: m.group(1) for p in SCRIPTS.glob("*.py") if (m := re.search(r'run_script\("(\w+)"\)', p.read_text()))
}


def _options(parser: argparse.ArgumentParser) -> set[str]:
    opts = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                opts |= _options(sub)
        opts |= {o for o in action.option_strings if o.startswith("--") and o != "--help"}
    return opts


def _parser(command: str) -> argparse.ArgumentParser:
    import importlib

    return importlib.import_module(f"contextware.cli.{COMMANDS[command]}").build_parser(command)


def test_front_matter():
    m = re.match(r"^---\nname: (\S+)\ndescription: (.+?)\n---\n", SKILL, re.S)
    assert m and m.group(1) == "contextware" and len(m.group(2)) > 40


@pytest.mark.parametrize("script", sorted(SCRIPT_COMMAND))
def test_every_script_and_option_is_in_skill_md(script):
    assert f"<skill_dir>/scripts/{script}.py" in SKILL
    missing = sorted(o for o in _options(_parser(SCRIPT_COMMAND[script])) if o not in SKILL)
    assert not missing, f"SKILL.md does not mention {missing} of {script}.py"


def test_skill_md_mentions_no_option_that_does_not_exist():
    known = set().union(*(_options(_parser(c)) for c in COMMANDS)) | {"--project"}  # uv run --project
    mentioned = set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", SKILL))
    assert not mentioned - known, sorted(mentioned - known)


@pytest.mark.parametrize("action", ["list", "get", "update", "delete", "stats", "reembed", "compact", "repair"])
def test_memory_actions_are_documented(action):
    assert f"scripts/memory.py {action}" in SKILL


def test_readme_starts_with_the_two_setup_commands():
    blocks = re.findall(r"```(?:sh|bash)?\n(.*?)```", README, re.S)
    assert "scripts/crawl_project.py" in blocks[0] and "&&" in blocks[0] and "scripts/recall.py" in blocks[0]
    assert blocks[1].strip() == "uv run pytest"
    ci = (REPO / ".ci" / "run").read_text()
    assert ci.strip().splitlines()[-1] == "uv run pytest"


def test_readme_lists_exactly_the_commands_of_contextware_help(capsys):
    """The README's table of `contextware` commands is the list `contextware --help` prints."""
    from contextware.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    listed = capsys.readouterr().out.split("commands:", 1)[1].splitlines()[0]
    in_help = {name.strip() for name in listed.split(",")}
    in_readme = set(re.findall(r"^\| `contextware ([\w-]+)` \|", README, re.M))
    assert in_readme == in_help, (sorted(in_help - in_readme), sorted(in_readme - in_help))
    for command in COMMANDS:  # every command's script is named in the table
        script = next((s for s, c in SCRIPT_COMMAND.items() if c == command), None)
        if script:
            assert f"| `contextware {command}` | `scripts/{script}.py` |" in README, command


def test_every_script_has_a_console_command_for_portable_settings():
    """Settings a project commits call `contextware <command>` instead of a path of one machine:
    every script needs its command (the plugin's skill text is rewritten through this table)."""
    from contextware.hosts.install.shared import SCRIPT_COMMANDS

    assert sorted(p.name for p in SCRIPTS.glob("*.py")) == sorted(SCRIPT_COMMANDS)
