"""Summarising files for the code index: the configured summariser (Gemini CLI in batches, or the
local tree-sitter one) run over work items in parallel, falling back to the local summariser file by
file when Gemini fails, and giving up on Gemini for the rest of a crawl after persistent failures or
TIMEOUTS_IN_A_ROW timeouts in a row."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from contextware.core.errors import FieldError, GeminiError

if TYPE_CHECKING:
    from contextware.codeindex.chunks import Chunk
    from contextware.codeindex.gemini_summary import SourceFile
    from contextware.codeindex.local_summary import LocalSummary
    from contextware.codeindex.source_text import Candidate
    from contextware.storage.project import Project

SUMMARIZERS = ("auto", "gemini", "local")
# Gemini failures that will not go away within one crawl: stop asking, fall back (or fail) at once.
_PERSISTENT = {"auth", "untrusted_folder", "config", "gemini_not_installed", "sandbox", "no_workdir"}
# Timeouts in a row after which the API is taken to be down for this crawl (each costs gemini_timeout_s).
TIMEOUTS_IN_A_ROW = 2


class SummaryReport(Protocol):
    """What summarising records in a crawl's report (``indexer.Report``)."""

    gemini_error: str | None
    fallbacks: int


# A file's summary and the summariser's name, or None and why it failed, by path.
Outcome = dict[str, "tuple[LocalSummary | None, str]"]


@dataclass
class Work:
    candidate: "Candidate"
    text: str
    digest: str
    chunks: "list[Chunk] | None" = None  # definition chunks made from the local summariser's own parse


def check_summarizer(name: str | None) -> str:
    name = name or "auto"
    if name not in SUMMARIZERS:
        raise FieldError(
            f"Unknown {{field}} {name!r}: use auto, gemini or local.", field="summarizer", code="bad_summarizer"
        )
    return name


class Summarizer:
    """Runs the configured summariser over work items; calls ``done(work, summary, name)`` for each
    file as soon as it is summarised, ``failed(work, message)`` for files that could not be."""

    def __init__(self, project: "Project", mode: str, jobs: int, report: SummaryReport, stop: threading.Event) -> None:
        self.project = project
        self.stop = stop
        self.mode = mode
        self.jobs = jobs
        self.report = report
        self.use_gemini = mode == "gemini" or (mode == "auto" and _gemini_ready())
        self.broken: GeminiError | None = None
        self.timeouts = 0  # in a row
        self.lock = threading.Lock()

    def run(
        self,
        items: list[Work],
        done: Callable[[Work, "LocalSummary", str], None],
        failed: Callable[[Work, str], None],
    ) -> None:
        if not items:
            return
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            futures: dict[Future[Outcome], list[Work]] = {}
            if self.use_gemini:
                from contextware.codeindex.gemini_summary import SourceFile, plan_batches

                by_path = {w.candidate.path: w for w in items}
                files = [SourceFile(w.candidate.path, w.text, _language(w)) for w in items]
                for batch in plan_batches(
                    files,
                    max_files=self.project.config.gemini_batch_files,
                    max_chars=self.project.config.gemini_batch_chars,
                ):
                    works = [by_path[f.path] for f in batch]
                    futures[pool.submit(self._gemini, batch)] = works
            else:
                for w in items:
                    futures[pool.submit(_local, w)] = [w]
            pending = set(futures)
            try:
                while pending:
                    finished, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                    for future in finished:
                        outcome = future.result()
                        for w in futures[future]:
                            summary, name = outcome[w.candidate.path]
                            if summary is None and self.stop.is_set():
                                continue  # stopped in the middle, not a failure of the file
                            if summary is None:
                                failed(w, name)
                            else:
                                done(w, summary, name)
                            if self.stop.is_set():  # done() embeds and writes: stop between files
                                raise KeyboardInterrupt
                    if self.stop.is_set():
                        raise KeyboardInterrupt
            except BaseException:
                for f in pending:
                    f.cancel()
                raise

    def _gemini(self, batch: "list[SourceFile]") -> Outcome:
        from contextware.codeindex.gemini_summary import summarize_batch

        results: "dict[str, LocalSummary | GeminiError]"
        if self.broken is not None:
            results = {f.path: self.broken for f in batch}
        else:
            cfg = self.project.config
            from contextware.core.system import contextware_home
            from contextware.gemini.availability import gemini_workdir

            try:
                cwd = gemini_workdir(contextware_home(self.project.settings))
            except OSError as exc:
                error = GeminiError(
                    f"Gemini's working folder could not be created: {exc.strerror or exc}.", code="no_workdir"
                )
                results = {f.path: error for f in batch}
            else:
                results = summarize_batch(
                    batch,
                    cwd=cwd,
                    model=cfg.gemini_model or None,
                    timeout=cfg.gemini_timeout_s,
                    state_dir=self.project.data_dir / "gemini",
                    rate_limit_per_minute=cfg.gemini_requests_per_minute,
                    rate_limit_backoff=cfg.gemini_rate_limit_backoff_s,
                    cancel=self.stop,
                )
        out: Outcome = {}
        timed_out = any(isinstance(r, GeminiError) and r.code == "timeout" for r in results.values())
        with self.lock:
            self.timeouts = self.timeouts + 1 if timed_out else 0
        for f in batch:
            result = results.get(f.path)
            if result is not None and not isinstance(result, Exception):
                out[f.path] = (result, "gemini")
                continue
            err = result if isinstance(result, GeminiError) else GeminiError("Gemini returned nothing for this file.")
            if err.code == "interrupted":  # the crawl is stopping: neither a Gemini failure nor a fallback
                out[f.path] = (None, err.message)
                continue
            with self.lock:
                if self.broken is None and (err.code in _PERSISTENT or self.timeouts >= TIMEOUTS_IN_A_ROW):
                    self.broken = err
                self.report.gemini_error = err.message
                if self.mode != "gemini":
                    self.report.fallbacks += 1
            if self.mode == "gemini":
                out[f.path] = (None, err.message)
            else:
                out[f.path] = (_summarize_local(f.path, f.text), "local")
        return out


def _gemini_ready() -> bool:
    from contextware.gemini.availability import gemini_ready

    return gemini_ready()


def _language(w: Work) -> str | None:
    from contextware.codeindex.languages import detect_language

    return detect_language(w.candidate.path, w.text[:256])


def _summarize_local(path: str, text: str) -> "LocalSummary":
    from contextware.codeindex.local_summary import summarize_local

    return summarize_local(path, text)


def _local(w: Work) -> Outcome:
    """The local summary, and the definition chunks from the same tree-sitter parse (parsing is
    most of a local summary's cost; in the worker thread, not the writer's)."""
    from contextware.codeindex.chunks import file_chunks
    from contextware.codeindex.local_summary import summarize_parsed

    summary, parsed = summarize_parsed(w.candidate.path, w.text)
    w.chunks = file_chunks(w.candidate.path, w.text, summary.language, parsed) if parsed is not None else []
    return {w.candidate.path: (summary, "local")}
