"""The Claude Code plugin committed in the repository is what ``claude_code.plugin_files`` builds (so it
follows SKILL.md and the hook events), and holds no path of any machine."""

from __future__ import annotations

import json

from contextware.hosts.install.claude_code import PLUGIN_DIR, marketplace_file, plugin_files
from tests.support.repo import REPO

REGENERATE = 'uv run python -c "from contextware.hosts.install.claude_code import write_plugin; write_plugin()"'


def test_the_committed_plugin_is_current_and_portable():
    for rel, text in plugin_files().items():
        path = REPO / PLUGIN_DIR / rel
        assert path.is_file() and path.read_text() == text, f"{path} is out of date: run {REGENERATE}"
        assert str(REPO) not in text and "/home/" not in text and "/root/" not in text
    assert (REPO / ".claude-plugin" / "marketplace.json").read_text() == marketplace_file(), REGENERATE
    hooks = json.loads(plugin_files()["hooks/hooks.json"])["hooks"]
    assert sorted(hooks) == ["PreCompact", "SessionStart", "Stop", "UserPromptSubmit"]
    for definitions in hooks.values():  # an array of matchers per event, as Claude Code requires
        assert [h["command"] for d in definitions for h in d["hooks"]] == ["contextware hook --host claude-plugin"]
    assert json.loads(plugin_files()[".mcp.json"]) == {
        "mcpServers": {"contextware": {"command": "contextware", "args": ["mcp"]}}
    }
