"""Summaries of offload answers: what the agent gets back instead of the full response.

A response that already fits ``summary_max_tokens`` is its own summary (method ``full``).  Otherwise a
fast Gemini model (``offload_summary_model``) writes one, run from a neutral folder so that the
project's file tree is not sent again (method ``gemini``); when that call fails, or
``offload_summarizer`` is ``truncate``, the response is cut at a sentence boundary within the budget
(method ``truncated``).  A session turn also updates the session's cumulative summary in the same
call.  Tokens are estimated as characters / 4.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from contextware.core.errors import ConfigError, GeminiError
from contextware.core.text import CHARS_PER_TOKEN, approx_tokens, cut_at_word
from contextware.gemini.headless import escape_at
from contextware.offload.files import gemini_options

if TYPE_CHECKING:
    from contextware.storage.project import Project

_SENTENCE_END = re.compile(r"[.!?][\"')\]]*(?=\s)|\n\s*\n")

SUMMARY_PROMPT = """\
Above is a research answer written for a software engineer. Summarise it for a coding agent that will \
act on it: the findings, decisions, names (files, functions, commands, settings) and open questions, \
in at most {words} words. Plain text or short Markdown bullets; no preamble."""

TURN_PROMPT = """\
Above are the summary of what a research session has learned so far, the latest question, and \
Gemini's answer to it. Reply with ONLY one JSON object, without Markdown fences or other text:
{{"turn_summary": "...", "summary": "..."}}
where turn_summary summarises the latest answer in at most {words} words, and summary is the updated \
summary of everything learned so far in at most {words} words: keep what still holds, add the new \
findings, drop what the new answer corrects."""


@dataclass
class Summary:
    text: str
    method: str  # full | gemini | truncated
    error: str | None = None  # why Gemini was not used, when it was tried


def truncate_sentences(text: str, max_tokens: int) -> str:
    """``text`` cut to at most ``max_tokens`` (estimated) at the last sentence or paragraph end; at a
    word boundary with an ellipsis when no sentence ends in the last three quarters of the budget."""
    text = text.strip()
    limit = max(1, max_tokens) * CHARS_PER_TOKEN
    if len(text) <= limit:
        return text
    window = text[: limit + 1]
    ends = [m.end() for m in _SENTENCE_END.finditer(window) if m.end() <= limit]
    if ends and ends[-1] >= limit // 4:
        return window[: ends[-1]].strip()
    return cut_at_word(text, limit)


def _words(project: "Project") -> tuple[int, int]:
    max_tokens = project.config.summary_max_tokens
    if max_tokens < 20:
        raise ConfigError("summary_max_tokens in config.json must be at least 20.", code="bad_config")
    return max_tokens, max(10, int(max_tokens * 0.7))


def _use_gemini(project: "Project") -> bool:
    from contextware.gemini.availability import gemini_available

    return project.config.offload_summarizer == "gemini" and gemini_available()


def _ask(project: "Project", prompt: str, stdin: str) -> str:
    from contextware.core.system import contextware_home
    from contextware.gemini.availability import gemini_workdir
    from contextware.gemini.headless import run_gemini

    model = project.config.offload_summary_model or project.config.gemini_model or None
    result = run_gemini(
        prompt,
        stdin_text=stdin,
        model=model,
        cwd=gemini_workdir(contextware_home(project.settings)),
        **gemini_options(project, research=False),
    )
    return result.response.strip()


def summarize_response(project: "Project", response: str) -> Summary:
    """The summary of one answer (see the module docstring for the methods)."""
    max_tokens, words = _words(project)
    if approx_tokens(response.strip()) <= max_tokens:
        return Summary(response.strip(), "full")
    error = None
    if _use_gemini(project):
        try:
            text = _ask(project, SUMMARY_PROMPT.format(words=words), escape_at(response))
            if text:
                return Summary(truncate_sentences(text, max_tokens), "gemini")
            error = "The summary model returned nothing."
        except GeminiError as exc:
            error = exc.message
    return Summary(truncate_sentences(response, max_tokens), "truncated", error)


def summarize_turn(
    project: "Project", *, previous: str | None, prompt: str, response: str, turn: int
) -> tuple[Summary, Summary]:
    """(summary of this turn, updated cumulative summary of the session)."""
    max_tokens, words = _words(project)
    if previous is None or not previous.strip():
        first = summarize_response(project, response)
        return first, first
    error = None
    if _use_gemini(project):
        stdin = (
            f"=== SUMMARY SO FAR ===\n{escape_at(previous.strip())}\n\n=== LATEST QUESTION ===\n"
            f"{escape_at(prompt.strip())}\n\n=== LATEST ANSWER ===\n{escape_at(response.strip())}"
        )
        try:
            reply = _ask(project, TURN_PROMPT.format(words=words), stdin)
            parsed = _parse_turn_reply(reply)
            if parsed:
                turn_text, cumulative = parsed
                return (
                    Summary(truncate_sentences(turn_text, max_tokens), "gemini"),
                    Summary(truncate_sentences(cumulative, max_tokens), "gemini"),
                )
            error = "The summary model's reply was not the JSON asked for."
        except GeminiError as exc:
            error = exc.message
    own = Summary(truncate_sentences(response, max_tokens), "truncated", error)
    if approx_tokens(response.strip()) <= max_tokens:
        own = Summary(response.strip(), "full", error)
    return own, Summary(_append(previous.strip(), f"Turn {turn}: {own.text}", max_tokens), "truncated", error)


def _append(previous: str, section: str, max_tokens: int) -> str:
    """The previous summary plus a new section, dropping the oldest paragraphs to stay in budget."""
    limit = max_tokens * CHARS_PER_TOKEN
    section = truncate_sentences(section, max_tokens)
    paragraphs = [p for p in re.split(r"\n\s*\n", previous) if p.strip()]
    while paragraphs and len("\n\n".join([*paragraphs, section])) > limit:
        paragraphs.pop(0)
    return "\n\n".join([*paragraphs, section])


def _parse_turn_reply(text: str) -> tuple[str, str] | None:
    from contextware.gemini.output import json_objects

    for obj in json_objects(text):
        turn, summary = obj.get("turn_summary"), obj.get("summary")
        if isinstance(turn, str) and isinstance(summary, str) and turn.strip() and summary.strip():
            return turn.strip(), summary.strip()
    return None
