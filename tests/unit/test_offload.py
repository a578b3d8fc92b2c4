"""Offload pieces that need no Gemini: the summary's sentence cut and the cache key.  Offloads against
the real Gemini CLI: tests/integration/test_offload_processes.py."""

from __future__ import annotations

from contextware.offload.summary import truncate_sentences


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


def test_a_relative_folder_is_the_projects_when_the_cwd_is_outside_it(make_project, tmp_path, monkeypatch):
    """From a folder outside the project that has a folder of the same name, ``docs`` still names the
    project's (it used to name the outside one, refused as outside the project)."""
    from contextware.offload.sources import resolve_sources

    project = make_project()
    (project.root / "docs").mkdir(exist_ok=True)
    (project.root / "docs" / "guide.md").write_text("How to deploy.\n")
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "docs").mkdir(parents=True)
    monkeypatch.chdir(elsewhere)
    sources = resolve_sources(project, include_dirs=["docs"])
    assert len(sources.dir_paths) == 1 and sources.dir_paths[0].samefile(project.root / "docs")
    monkeypatch.chdir(project.root / "docs")  # inside the project: the working directory wins
    (project.root / "docs" / "docs").mkdir()
    assert resolve_sources(project, include_dirs=["docs"]).dir_paths[0].samefile(project.root / "docs" / "docs")
