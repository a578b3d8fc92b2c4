"""Gemini CLI's own tools during an offload (issue 23 l), against the REAL CLI and the fake API: the
model asks for a file with the CLI's tools (a scripted ``functionCall``), and what the CLI sends back
is checked.  Gemini CLI 0.61 blocks only a file named exactly ``.env``; every other secret file, a
grep over the project, a ``..`` path, the data dir and, without ``--include-dirs``, any file at all
must be refused by Contextware's admin policy (``offload/shield.py``), while a file in an included
folder is still read."""

from __future__ import annotations

import json

import pytest

from contextware.offload.run import offload
from tests.support import secret_corpus as sc
from tests.support.fake_gemini_api import Reply

pytestmark = pytest.mark.slow
SECRET = sc.AWS_ACCESS


def _call(name: str, args: dict) -> Reply:
    event = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"functionCall": {"name": name, "args": args}}]},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 5, "totalTokenCount": 10},
        "modelVersion": "gemini-2.5-pro",
    }
    return Reply(raw=f"data: {json.dumps(event)}\r\n\r\n")


def _tool_answer(api) -> dict:
    """What the CLI sent back for the scripted tool call."""
    for content in api.chat_requests()[-1].body["contents"]:
        for part in content.get("parts", []):
            if "functionResponse" in part:
                return part["functionResponse"]["response"]
    raise AssertionError("the CLI sent no tool answer")


CASES = [  # (tool, args, include dirs, read?)
    ("read_file", {"file_path": ".env.production"}, "src", False),
    ("read_file", {"file_path": "src/.env.local"}, "src", False),
    ("read_file", {"file_path": "ROOT/keys/id_ed25519"}, "src", False),
    ("read_file", {"file_path": ".aws/credentials"}, "src", False),
    ("read_file", {"file_path": "src/../docs/design.md"}, "src", False),
    ("read_file", {"file_path": "docs/design.md"}, "src", False),  # outside the included folder
    ("read_file", {"file_path": "contextware_data/config.json"}, "src", False),
    ("grep_search", {"pattern": "AKIA"}, "src", False),
    ("list_directory", {"dir_path": "contextware_data"}, "src", False),
    ("read_file", {"file_path": "src/app.py"}, None, False),  # no --include-dirs: no file tools at all
    ("read_file", {"file_path": "src/app.py"}, "src", True),
    ("read_file", {"file_path": "ROOT/src/app.py"}, "src", True),
]


@pytest.mark.parametrize(
    "tool, args, include, readable", CASES, ids=[f"{c[0]}:{json.dumps(c[1])}:{c[2]}" for c in CASES]
)
def test_gemini_tools_in_an_offload_never_read_secret_or_unshared_files(
    real_gemini, make_project, tool, args, include, readable
):
    project = make_project()
    root = project.root
    (root / ".env.production").write_text(f"AWS_ACCESS_KEY_ID={SECRET}\n")
    (root / "src" / ".env.local").write_text(f"AWS_ACCESS_KEY_ID={SECRET}\n")
    (root / "keys").mkdir()
    (root / "keys" / "id_ed25519").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{SECRET}\n")
    (root / ".aws").mkdir()
    (root / ".aws" / "credentials").write_text(f"aws_access_key_id = {SECRET}\n")
    args = {k: v.replace("ROOT", str(root)) for k, v in args.items()}
    real_gemini.push(_call(tool, args), "The handler routes each request through route().")
    out = offload(project, "How are requests routed?", include_dirs=include)
    assert out["summary"].startswith("The handler routes")
    answer = _tool_answer(real_gemini)
    sent = json.dumps([r.body for r in real_gemini.chat_requests()])
    assert SECRET not in sent
    if readable:
        assert "UNIQUE-APP-CONTENT" in answer.get("output", ""), answer
    else:
        assert "error" in answer and "output" not in answer, answer
