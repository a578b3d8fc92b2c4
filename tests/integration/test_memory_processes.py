"""Bad input to the memory commands as processes: refused with exit 2, nothing written."""

from __future__ import annotations

# The library names the input ("kind"); the command line words it as its flag ("--kind"), MCP as
# its parameter: tests/integration/test_cli.py and test_mcp_server.py hold those wordings.
import pytest

from contextware.core.errors import UsageError
from contextware.memory import edits, records


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda p: records.save_fact(p, "   \n "), "empty"),
        (lambda p: records.save_fact(p, "x" * 5000), "limit"),
        (lambda p: records.save_fact(p, "ok", kind="opinion"), "Unknown kind"),
        (lambda p: records.save(p, "memo", "ok"), "Unknown type"),
        (lambda p: records.save(p, "fact", "ok", goal="g"), "does not apply"),
        (lambda p: records.save_episode(p, "did it", goal="g", result="meh"), "Unknown result"),
        (
            lambda p: records.save_episode(p, "did it", goal=None, result="success"),
            "needs a goal",
        ),  # the input, not a CLI flag (issue 31)
        (lambda p: records.save_log(p, "hello", session_id=None, role="user"), "needs a session"),
        (lambda p: records.save_log(p, "hello", session_id="s", role="robot"), "Unknown role"),
        (lambda p: records.get(p, "fact-nothere"), "No memory"),
        (lambda p: edits.delete(p, "fact-0123456789ab"), "No memory"),
    ],
)
def test_bad_input_is_refused_and_writes_nothing(project, call, message):
    with pytest.raises(UsageError, match=message) as info:
        call(project)
    assert info.value.exit_code == 2
    assert (
        not (project.data_dir / "lancedb").exists()
        or not project.db.table_names()
        or records.list_records(project)["total"] == 0
    )
