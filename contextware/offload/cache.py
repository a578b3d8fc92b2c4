"""One-shot offloads: ask Gemini once, keep the answer on disk, give back its summary.

The cache key covers the prompt, the model, the given files and folders (their paths) and the piped
context; the entry records the content hash of every file it depends on, so a look-up is a hit only
while those contents are unchanged (mtime and size first, then the hash) and the entry is younger
than ``cache_ttl_days``.  A miss or a stale hit runs Gemini in the project root (folders through
``--include-directories``, files on stdin), writes ``offloads/cache/<key>/`` in one step (temporary
folder renamed into place), then indexes the summary.  Errors are raised before anything is written,
so they are never cached.  Offloads of one key are serialised by a lock held across the Gemini call:
a second caller waits and gets the first caller's answer from the cache.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextware.core.text import iso, parse_iso, utcnow
from contextware.offload.files import (
    FULL_RESPONSE,
    METADATA,
    SUMMARY,
    cache_root,
    data_relative,
    display_path,
    entry_lock,
    gemini_options,
    new_gemini_session_id,
    read_json,
    read_text,
    redact_texts,
    write_entry_dir,
    write_json,
)
from contextware.offload.shield import offload_policy
from contextware.offload.sources import Sources, build_stdin, stale_reason, text_sha256
from contextware.offload.table import make_row, row_id, write_rows

if TYPE_CHECKING:
    from contextware.storage.project import Project
    from contextware.storage.schemas import OffloadRow

FORMAT_VERSION = 1


def cache_key(prompt: str, model: str | None, sources: Sources) -> str:
    body = {"v": FORMAT_VERSION, "prompt": prompt, "model": model or "auto", **sources.key_material()}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:32]


def ttl_reason(project: "Project", meta: Mapping[str, object]) -> str | None:
    ttl = project.config.cache_ttl_days
    if not ttl or float(ttl) <= 0:
        return None
    created = parse_iso(meta.get("created_at"))
    if created is None:
        return "its creation time is unknown"
    age_days = (utcnow() - created).total_seconds() / 86400
    return f"it is {age_days:.1f} days old (cache_ttl_days is {float(ttl):g})" if age_days > float(ttl) else None


def entry_row(project: "Project", meta: dict[str, Any], summary: str) -> "OffloadRow":
    """The index row of a cache entry (also used by sync to rebuild it)."""
    return make_row(
        project,
        id=meta.get("id") or row_id("cache", meta["key"]),
        prompt=meta.get("prompt") or "",
        type=meta.get("type") or "offload",
        summary=summary,
        summary_method=meta.get("summary_method") or "full",
        response_file=meta.get("response_file")
        or data_relative(project, cache_root(project) / meta["key"] / FULL_RESPONSE),
        created_at=parse_iso(meta.get("created_at")) or utcnow(),
        model=meta.get("model"),
        source_paths=meta.get("source_paths") or [],
        source_hash=meta.get("source_hash"),
        source_type=meta.get("source_type"),
        topics=meta.get("topics") or [],
        token_count=meta.get("token_count"),
    )


def _answer(project: "Project", meta: dict[str, Any], summary: str, cached: bool) -> dict[str, Any]:
    return {
        "cached": cached,
        "summary": summary,
        "full_response_path": display_path(project, meta["response_file"]),
        "tokens": meta.get("token_count"),
        "summary_method": meta.get("summary_method"),
        "key": meta["key"],
        "id": meta["id"],
        "model": meta.get("model"),
        "created_at": meta.get("created_at"),
        "gemini_session_id": meta.get("gemini_session_id"),
    }


def offload_once(
    project: "Project",
    prompt: str,
    *,
    sources: Sources,
    texts: dict[str, str],
    model: str | None,
    topics: Sequence[str] = (),
    refresh: bool = False,
) -> dict[str, Any]:
    """Answer from the cache when the entry is fresh, else ask Gemini (``texts``: the ``--files``
    contents, read and checked by the caller before anything is written)."""
    from contextware.gemini.headless import run_gemini
    from contextware.offload.summary import summarize_response

    key = cache_key(prompt, model, sources)
    entry = cache_root(project) / key
    with entry_lock(project, "key", key):
        meta = read_json(entry / METADATA)
        summary = read_text(entry / SUMMARY)
        reason = None
        if meta is not None and summary is not None and (entry / FULL_RESPONSE).is_file():
            if refresh:
                reason = "--refresh was given"
            else:
                reason = ttl_reason(project, meta)
                touched: list[str] = []
                if reason is None:
                    reason, touched = stale_reason(meta.get("sources") or [], sources.tracked)
                if reason is None:
                    return _hit(project, entry, meta, summary, touched, sources, topics)

        stdin = build_stdin(sources, texts)
        manifest = sources.manifest()  # what Gemini is shown (hashed before the call)
        source_hash = sources.source_hash()
        session_id = new_gemini_session_id("offload")
        result = run_gemini(
            prompt,
            stdin_text=stdin,
            model=model,
            include_dirs=[str(p) for p in sources.dir_paths],
            session_id=session_id,
            cwd=project.root,
            policy=offload_policy(project, sources.dir_paths),  # what Gemini's own tools may not read
            **gemini_options(project),
        )
        redacted: dict[str, int] = {}
        stored_prompt, response = redact_texts(redacted, prompt, result.response)  # secrets never stored
        summary_obj = summarize_response(project, response)
        now = utcnow()
        meta = {
            "version": FORMAT_VERSION,
            "key": key,
            "id": row_id("cache", key),
            "type": "offload",
            "project": str(project.root),
            "prompt": stored_prompt,
            "prompt_hash": text_sha256(prompt),
            "model": model,
            "models": result.models,
            "topics": list(topics),
            "files": [f.path for f in sources.files],
            "include_dirs": list(sources.dirs),
            "source_paths": sources.source_paths,
            "source_type": sources.source_type,
            "source_hash": source_hash,
            "sources": manifest,
            "stdin_sha256": sources.key_material()["stdin"],
            "created_at": iso(now),
            "gemini_session_id": result.session_id or session_id,
            "tokens": result.tokens,
            "token_count": result.tokens.get("total", 0),
            "summary_method": summary_obj.method,
            "summary_error": summary_obj.error,
            "response_file": data_relative(project, entry / FULL_RESPONSE),
            "session_name": None,
            "turn_number": None,
            "feature": None,
        }
        write_entry_dir(
            entry,
            {
                METADATA: json.dumps(meta, indent=2, ensure_ascii=False) + "\n",
                FULL_RESPONSE: response,
                SUMMARY: summary_obj.text,
            },
        )
    out = _answer(project, meta, summary_obj.text, cached=False)
    if reason:
        out["stale_reason"] = reason
    if summary_obj.error:
        out["summary_error"] = summary_obj.error
    if redacted:
        out["redacted"] = redacted
    out.update(write_rows(project, [entry_row(project, meta, summary_obj.text)]))
    return out


def _hit(
    project: "Project",
    entry: Path,
    meta: dict[str, Any],
    summary: str,
    touched: list[str],
    sources: Sources,
    topics: Sequence[str],
) -> dict[str, Any]:
    """A fresh entry: refresh the recorded stats of touched files (so the next look-up needs no
    hashing) and add new topics; the index is written only when topics changed."""
    changed = False
    if touched:
        stats = {f.path: f for f in sources.tracked}
        for m in meta.get("sources") or []:
            if m["path"] in stats:
                m["mtime"], m["size"] = stats[m["path"]].mtime, stats[m["path"]].size
        changed = True
    new_topics = [t for t in topics if t not in (meta.get("topics") or [])]
    if new_topics:
        meta["topics"] = [*(meta.get("topics") or []), *new_topics]
        changed = True
    if changed:
        write_json(entry / METADATA, meta)
    out = _answer(project, meta, summary, cached=True)
    if new_topics:
        out.update(write_rows(project, [entry_row(project, meta, summary)]))
    return out
