"""``import`` writes in chunks (real LanceDB, real model): the model never sees more than a chunk, the
counts and rows are those of one write, folds wait for the rows they fold into, and an import killed
with SIGKILL between two chunks has lost nothing and finishes when run again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from contextware.memory.records import get, save_fact
from contextware.memory.team import importing
from contextware.memory.team.share import export_memory, import_memory

HEADER = '{"format": "contextware-memory", "version": 2}\n'


def _facts(n: int, start: int = 0) -> list[dict]:
    return [
        {
            "id": f"fact-{i + 1:012x}",
            "kind": "note",
            "text": f"Service {i} listens on port {8000 + i} and logs to /var/log/s{i}.",
            "created_at": f"2026-02-{i % 28 + 1:02d}T09:00:00Z",
        }
        for i in range(start, start + n)
    ]


def _file(rows: list[dict]) -> str:
    return HEADER + "".join(json.dumps(r) + "\n" for r in rows)


def _ids(project) -> list[str]:
    table = project.db.open_table("facts")
    return sorted(table.to_arrow().column("id").to_pylist()) if table is not None else []


@pytest.mark.slow
def test_chunks_bound_what_the_model_sees_and_write_what_one_write_would(project, monkeypatch):
    monkeypatch.setattr(importing, "CHUNK_ROWS", 4)
    seen: list[int] = []
    real = importing._embed_sorted

    def counting(embedder, texts):
        seen.append(len(texts))
        return real(embedder, texts)

    monkeypatch.setattr(importing, "_embed_sorted", counting)
    facts = _facts(10)
    report = import_memory(project, _file(facts), source="x")
    assert (report["added"], report["updated"], report["unchanged"]) == (10, 0, 0)
    assert seen == [4, 4, 2]
    assert _ids(project) == sorted(f["id"] for f in facts)
    newer = [{**f, "text": f["text"] + " Moved.", "updated_at": "2026-03-01T00:00:00Z"} for f in facts[:5]]
    again = import_memory(project, _file([*newer, *facts[5:]]), source="x")
    assert (again["added"], again["updated"], again["unchanged"]) == (0, 5, 5)
    assert get(project, facts[0]["id"])["record"]["text"].endswith("Moved.")
    assert import_memory(project, _file([*newer, *facts[5:]]), source="x")["unchanged"] == 10


@pytest.mark.slow
def test_a_fold_into_a_row_of_a_later_chunk_waits_for_it(project, monkeypatch):
    monkeypatch.setattr(importing, "CHUNK_ROWS", 2)
    mine = save_fact(project, "Releases are cut on Tuesdays.", kind="convention")["id"]
    theirs = {"id": "fact-000000000000", "kind": "note", "text": "Releases are cut on Tuesdays."}
    theirs["created_at"] = "2026-01-01T00:00:00Z"
    report = import_memory(project, _file([*_facts(5), theirs]), source="x")
    assert report["folded_into"] == {mine: theirs["id"]} and report["added"] == 6, report
    assert mine not in _ids(project) and theirs["id"] in _ids(project)


@pytest.mark.slow
def test_an_import_killed_between_chunks_loses_nothing_and_finishes_when_run_again(project, project_dir, tmp_path):
    mine = save_fact(project, "Releases are cut on Tuesdays.", kind="convention")["id"]
    theirs = {"id": "fact-000000000000", "kind": "note", "text": "Releases are cut on Tuesdays."}
    theirs["created_at"] = "2026-01-01T00:00:00Z"
    file = tmp_path / "team.jsonl"
    file.write_text(_file([theirs, *_facts(7)]), encoding="utf-8")
    killer = textwrap.dedent(
        f"""
        import os, signal
        from contextware.memory.team import importing
        from contextware.storage.project import Project

        importing.CHUNK_ROWS = 3
        real, calls = importing._write_chunk, []

        def write(*args, **kw):
            out = real(*args, **kw)
            calls.append(1)
            if len(calls) == 2:
                os.kill(os.getpid(), signal.SIGKILL)
            return out

        importing._write_chunk = write
        project = Project.open({str(project_dir)!r})
        importing.import_memory(project, open({str(file)!r}).read(), source="team.jsonl")
        """
    )
    proc = subprocess.run([sys.executable, "-c", killer], env=os.environ.copy(), capture_output=True, timeout=300)
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    written = _ids(project)
    assert mine in written and theirs["id"] in written and len(written) == 7  # two chunks, no fold yet
    report = import_memory(project, file.read_text(encoding="utf-8"), source="team.jsonl")
    assert (report["added"], report["unchanged"], report["folded_into"]) == (2, 6, {mine: theirs["id"]}), report
    assert _ids(project) == sorted([theirs["id"], *(f["id"] for f in _facts(7))])
    again = import_memory(project, file.read_text(encoding="utf-8"), source="team.jsonl")
    assert (again["added"], again["updated"], again["deleted"], again["unchanged"]) == (0, 0, 0, 8)
    lines = export_memory(project, None)["jsonl"].splitlines()[1:]
    assert len(lines) == 8


def test_lines_are_read_from_the_text_as_the_file_splitter_numbers_them():
    """Split on "\\n" only (U+2028 and the other Unicode breaks stay inside their line), like ``file_lines``."""
    from contextware.memory.team.memfile import file_lines

    text = "a\nb\r\nc\rd\x0be\x0cf\x1cg\x85h\u2028i\u2029j\n\nk"
    lines = importing.Lines(text)
    expected = list(file_lines(text))
    assert expected == ["a", "b", "c\rd\x0be\x0cf\x1cg\x85h\u2028i\u2029j", "", "k"]
    assert [lines[k] for k in range(len(expected))] == expected
