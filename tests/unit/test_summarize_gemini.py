"""contextware.codeindex.gemini_summary without the CLI: the request format, batching and the tolerant
reply parser.  Batches through the real Gemini CLI: tests/integration/test_summarize_gemini_processes.py."""

from __future__ import annotations

import json

import pytest

from contextware.codeindex.gemini_summary import (
    FILE_CHARS_LIMIT,
    SourceFile,
    build_request,
    parse_reply,
    plan_batches,
    results_from_reply,
    summarize_batch,
)
from contextware.codeindex.local_summary import LocalSummary
from contextware.core.errors import GeminiError, UsageError
from tests.support.fake_gemini_api import RecordedRequest, Reply, parse_prompt_files, summaries_responder


def _files(*specs: tuple[str, str, str | None]) -> list[SourceFile]:
    return [SourceFile(path, text, language) for path, text, language in specs]


# ---------------------------------------------------------------- the request, without the CLI
def test_request_format_and_fake_parser():
    big = SourceFile("data/big.py", "x = 1\n" * (FILE_CHARS_LIMIT // 6 + 100), None)
    at = SourceFile("node_modules/@types/x.d.ts", "export type X = 1; // @ts-ignore\n", "typescript")
    prompt, stdin = build_request([big, at], "feedc0de")
    assert "===== FILE feedc0de: data/big.py (python, truncated: first " in stdin  # language detected
    assert "===== FILE feedc0de: node_modules/\\@types/x.d.ts (typescript) =====" in stdin
    assert "feedc0de" in prompt and "2 source file(s)" in prompt
    assert "@" not in (stdin + prompt).replace("\\@", "")  # nothing for the CLI's @path expansion
    assert len(prompt) < 1500
    parsed = parse_prompt_files(stdin + "\n\n" + prompt)
    assert [(f.path, f.language, f.truncated) for f in parsed] == [
        ("data/big.py", "python", True),
        ("node_modules/@types/x.d.ts", "typescript", False),
    ]
    assert len(parsed[0].text) <= FILE_CHARS_LIMIT and parsed[0].text.endswith("x = 1\n")
    assert parsed[1].text == at.text
    _, again = build_request([at], "0ther")
    assert "feedc0de" not in again


def test_responder_without_files_and_with_overrides():
    responder = summaries_responder({"a.py": {"symbols": ["x"]}}, other=Reply(text="plain"))
    plain = RecordedRequest(
        "POST",
        "/v1beta/models/m:streamGenerateContent",
        {},
        {},
        {"contents": [{"role": "user", "parts": [{"text": "What is 2+2?"}]}]},
    )
    assert responder(plain).text == "plain" and responder.batches == []
    _, stdin = build_request(_files(("a.py", "def f(): pass\n", "python")), "abc123")
    req = RecordedRequest(
        "POST",
        "/v1beta/models/m:streamGenerateContent",
        {},
        {},
        {"contents": [{"role": "user", "parts": [{"text": stdin}]}]},
    )
    assert json.loads(responder(req))["files"][0]["symbols"] == ["x"]
    assert responder.paths == ["a.py"]


# ---------------------------------------------------------------- batching
def test_plan_batches_groups_by_count_and_size():
    small = [SourceFile(f"s{i}.py", "a" * 10, "python") for i in range(5)]
    assert [[f.path for f in b] for b in plan_batches(small, max_files=2)] == [
        ["s0.py", "s1.py"],
        ["s2.py", "s3.py"],
        ["s4.py"],
    ]
    assert [len(b) for b in plan_batches(small, max_files=8, max_chars=25)] == [2, 2, 1]
    big = SourceFile("big.py", "b" * 100, "python")
    batches = plan_batches([small[0], big, small[1], small[2]], max_chars=50)
    assert [[f.path for f in b] for b in batches] == [["big.py"], ["s0.py", "s1.py", "s2.py"]]
    assert plan_batches([]) == []
    assert len(plan_batches(small)) == 1
    with pytest.raises(UsageError):
        plan_batches(small, max_files=0)


def test_summarize_batch_programmer_errors(tmp_path):
    with pytest.raises(UsageError):
        summarize_batch([], cwd=tmp_path)
    with pytest.raises(UsageError):
        summarize_batch(_files(("a.py", "", None), ("a.py", "", None)), cwd=tmp_path)


def test_path_with_control_characters_is_not_sent(tmp_path):
    results = summarize_batch(_files(("bad\nname.py", "x", None)), cwd=tmp_path)
    assert results["bad\nname.py"].code == "invalid_path"


# ---------------------------------------------------------------- the tolerant parser
GOOD = {"path": "a.py", "summary": "Does A.", "symbols": ["A"]}


@pytest.mark.parametrize(
    "text",
    [
        json.dumps({"files": [GOOD]}),
        "```json\n" + json.dumps({"files": [GOOD]}, indent=2) + "\n```",
        "Sure! Here is the JSON:\n" + json.dumps({"files": [GOOD]}) + "\nHope this helps {really}.",
        json.dumps([GOOD]),
        "```\n" + json.dumps([GOOD]) + "\n```",
        json.dumps(GOOD),
        json.dumps({"a.py": {"summary": "Does A.", "symbols": ["A"]}}),
        "Notes {not json} then " + json.dumps({"files": [GOOD]}) + " and a stray }",
    ],
)
def test_parse_reply_tolerates_wrappers(text):
    assert parse_reply(text) == [GOOD]


@pytest.mark.parametrize("text", ["", "I cannot help with that.", "{broken", '{"answer": 42}', "[1, 2]"])
def test_parse_reply_rejects_non_results(text):
    with pytest.raises(GeminiError) as info:
        parse_reply(text)
    assert info.value.code == "invalid_response"


def test_results_matching_and_validation():
    files = _files(
        ("a.py", "", "python"), ("node_modules/@x/b.ts", "", "typescript"), ("c.go", "", "go"), ("d.rb", "", None)
    )
    reply = [
        {
            "path": "./a.py",
            "summary": "  First.\n\n  Second line. " + "word " * 400,
            "symbols": [" A ", "A", "", 3, None, "`A.run`", "x" * 500] + [f"s{i}" for i in range(300)],
        },
        {"path": "node_modules/\\@x/b.ts", "summary": "Mentions \\@x.", "symbols": None},
        {"path": "c.go", "summary": 42, "symbols": []},
        {"path": "unknown.py", "summary": "Not asked for.", "symbols": []},
        "junk",
        {"path": "d.rb", "summary": "", "symbols": []},
        {"path": "d.rb", "summary": "Second try is fine.", "symbols": ["D"]},
        {"path": "d.rb", "summary": "A later duplicate is ignored.", "symbols": []},
    ]
    results = results_from_reply(files, json.dumps(reply))
    assert list(results) == ["a.py", "node_modules/@x/b.ts", "c.go", "d.rb"]
    a = results["a.py"]
    assert a.language == "python" and a.summary.startswith("First. Second line. word")
    assert len(a.summary) <= 1200 and a.summary.endswith("…")
    assert a.symbols[:3] == ["A", "A.run", "s0"] and len(a.symbols) == 200
    b = results["node_modules/@x/b.ts"]
    assert (b.summary, b.symbols) == ("Mentions @x.", [])
    assert results["c.go"].code == "invalid_result"
    assert results["d.rb"] == LocalSummary(None, "Second try is fine.", ["D"])
