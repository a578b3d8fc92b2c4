"""A prompt that starts with '-' reaches the REAL Gemini CLI (0.61.0) as the prompt, never as an
option: ``offload --prompt=--yolo`` once ran Gemini with every tool approved (issue 35, 7a)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextware.gemini.headless import build_command, run_gemini
from tests.support.fake_gemini_api import FakeGeminiAPI

MODEL = "gemini-2.5-flash"
# Tools Gemini CLI offers in a headless run only when every call is approved (--yolo).
APPROVAL_ONLY_TOOLS = {"run_shell_command", "write_file", "replace"}


def test_build_command_passes_the_prompt_as_one_option_value():
    cmd = build_command("gemini", "--yolo", model=MODEL)
    assert cmd[-1] == "--prompt=--yolo" and "-p" not in cmd and "--yolo" not in cmd


@pytest.mark.parametrize("prompt", ["--yolo", "-y", "--approval-mode=yolo", "-p x --yolo"])
def test_a_prompt_like_an_option_reaches_the_model_as_text(
    prompt: str, gemini_bin: str, gemini_cli_env: dict[str, str], fake_gemini_api: FakeGeminiAPI, tmp_path: Path
):
    project = tmp_path / "project"
    project.mkdir()
    fake_gemini_api.push("An answer.")
    result = run_gemini(prompt, model=MODEL, binary=gemini_bin, cwd=project, timeout=60, extra_env=gemini_cli_env)
    assert result.response == "An answer."
    chat = fake_gemini_api.chat_requests()[-1]
    assert chat.texts()[-1] == prompt  # the literal text, as the user's turn
    offered = {d.get("name") for tool in chat.body.get("tools") or [] for d in tool.get("functionDeclarations") or []}
    assert not offered & APPROVAL_ONLY_TOOLS, json.dumps(sorted(offered))  # approval mode stayed default
