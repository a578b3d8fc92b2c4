"""One-shot offloads (contextware.offload.run / scripts/offload.py) against the REAL Gemini CLI talking to
the local fake API: cache hits, staleness by edit and by TTL, errors never cached, the summary and
its fallback, the script's envelope and bad input.  Each real CLI run costs ~2 s, so each test
checks several things.  Sessions: test_offload_sessions.py; sync, --global and concurrency (with a
fake `gemini` executable): test_offload_sync.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextware.errors import UsageError
from contextware.offload.run import offload
from contextware.offload.summary import truncate_sentences
from tests.offload_helpers import (  # noqa: F401
    fake_gemini,
    make_project,
    real_gemini,
    table_rows,
    user_text,
    varied_text,
    write_sources,
)


def _entries(project) -> list[Path]:
    root = project.data_dir / "offloads" / "cache"
    return sorted(p for p in root.iterdir() if not p.name.startswith(".")) if root.is_dir() else []


# ---------------------------------------------------------------- no CLI
def test_truncate_sentences():
    text = "One short sentence. Another one follows here! A third? " + "word " * 50
    assert truncate_sentences(text, 12) == "One short sentence. Another one follows here!"
    assert truncate_sentences("tiny", 10) == "tiny"
    cut = truncate_sentences("alpha " * 100, 10)
    assert cut.endswith("…") and len(cut) <= 40


def test_cache_key_covers_prompt_model_paths_and_piped_context(make_project):
    from contextware.offload.cache import cache_key
    from contextware.offload.sources import resolve_sources

    project = make_project()
    base = resolve_sources(project, ["src/app.py"], ["docs"])
    key = cache_key("q", "m", base)
    assert cache_key("q", "m", resolve_sources(project, ["src/app.py"], ["docs"])) == key
    assert cache_key("q2", "m", base) != key and cache_key("q", "m2", base) != key
    assert cache_key("q", "m", resolve_sources(project, ["src/util.py"], ["docs"])) != key
    assert cache_key("q", "m", resolve_sources(project, ["src/app.py"], [])) != key
    assert cache_key("q", "m", resolve_sources(project, ["src/app.py"], ["docs"], "piped")) != key
    # the entry records every file's content hash: an edit under a folder, or a new file, is stale
    from contextware.offload.sources import stale_reason

    manifest = base.manifest()
    (project.root / "docs" / "design.md").write_text("# Design v2\n")
    assert (
        stale_reason(manifest, resolve_sources(project, ["src/app.py"], ["docs"]).tracked)[0]
        == "docs/design.md changed"
    )
    (project.root / "docs" / "new.md").write_text("new\n")
    assert (
        stale_reason(manifest, resolve_sources(project, ["src/app.py"], ["docs"]).tracked)[0] == "docs/new.md was added"
    )


def test_binary_file_is_bad_input(fake_gemini, make_project):
    project = make_project()
    (project.root / "blob.bin").write_bytes(b"\x00\x01\x02" * 10)
    with pytest.raises(UsageError) as info:
        offload(project, "q", files=str(project.root / "blob.bin"))
    assert info.value.code == "not_text" and fake_gemini.calls() == []
    assert not (project.data_dir / "offloads").exists()


def test_secrets_are_redacted_before_storage(fake_gemini, make_project):
    project = make_project()
    out = offload(project, "Why does login with password=hunter2secret fail?")
    assert out["redacted"] == {"password_assignment": 2}  # the prompt and its echo in the answer
    assert "password=hunter2secret" in fake_gemini.calls()[0]["argv"][-1]  # Gemini gets the real prompt
    entry = _entries(project)[0]
    stored = [(entry / n).read_text() for n in ("metadata.json", "full_response.md", "summary.md")]
    stored.append(json.dumps(table_rows(project), default=str))
    assert all("hunter2secret" not in text for text in stored) and "[REDACTED:password_assignment]" in stored[1]
    # the cache still finds it (the key is made from the prompt as given)
    assert offload(project, "Why does login with password=hunter2secret fail?")["cached"] is True
