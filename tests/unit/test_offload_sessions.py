"""Recovering a lost offload session: which Gemini sessions qualify, by age, title and preference.
Sessions against the real Gemini CLI: tests/integration/test_offload_sessions_processes.py."""

from __future__ import annotations

from contextware.gemini.sessions import GeminiSession
from contextware.offload.sessions import age_minutes, find_recoverable


def test_find_recoverable_ages_titles_and_preference():
    S = GeminiSession
    sessions = [
        S(1, "Research on the search feature", "3 days ago", "0a1b2c3d-uuid"),
        S(2, "Unrelated", "2 hours ago", "cw_search_11111111"),
        S(3, "[Feature: search] old", "9 days ago", "cw_search_22222222"),
        S(4, "researching", "Just now", "x1"),
    ]
    assert find_recoverable(sessions, "search", "search", 7) == "cw_search_11111111"  # id match wins
    assert find_recoverable(sessions[:1] + sessions[2:], "search", "search", 7) == "0a1b2c3d-uuid"  # title
    assert find_recoverable(sessions[2:], "search", "search", 7) is None  # too old; "researching" is not "search"
    assert find_recoverable(sessions[2:], "search", "search", 10) == "cw_search_22222222"
    assert [age_minutes(a) for a in ("Just now", "1 minute ago", "5 hours ago", "2 days ago, current", "soon")] == [
        0,
        1,
        300,
        2880,
        None,
    ]
