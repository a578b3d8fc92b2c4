"""Long-horizon recall: months of a real project's history stored as conversation logs with their
real dates, questions paraphrased from it by fixed rules, and recall beside plain BM25 and plain
MiniLM cosine over the same rows.

    uv run bench/long_horizon.py                       # held-out test split, aggregates only
    uv run bench/long_horizon.py --split tune          # the split to tune on
    uv run bench/long_horizon.py --split tune --details   # per-question lines (tune only)
    uv run bench/long_horizon.py --smoke               # a few dozen rows, a handful of questions

Data: the git history of HarfBuzz that Debian ships as ``/usr/share/doc/libharfbuzz0b/changelog.gz``
in the package ``libharfbuzz0b`` (6.0.0+dfsg-3): 14,662 commits from 2000 to December 2022, each with
its author, its real date, its message and the files it touched.  It is fetched with
``apt-get download`` into the cache (or read from the installed package) and never committed.

The simulated project history (``build_history``), all of it decided by hashes of the commit ids, so
the store is the same for every split and every run:

- the newest commits up to ``--limit-rows`` log rows; each commit is a coding session turn pair: the
  user's request (the commit subject) and the agent's answer (the message body and the files
  changed, cut in chunks of at most 1,500 characters as ``save_log`` would), both with the commit's
  date; commits of one author on one day share a session id;
- echoes: for one commit in five that has a question, the user asks that question again one to
  three times in later weeks (stored as user turns that are not evidence);
- episodes: one per release in the window ("Release 5.3.1": the subjects of the commits since the
  previous release, an extractive digest); facts: "The latest HarfBuzz release is X" per release,
  each superseding the one before;
- held-out commits: about one eligible commit in eight is left out of the store; questions made
  from them are the unanswerable ones (same project, same vocabulary, answer not in memory); a
  held-out commit whose subject shares half its content words with a stored one is dropped.

Questions (``paraphrase``): a rule-based rewrite of the commit subject (the tag becomes "in the X
code", the leading verb a question lead, words replaced from a fixed synonym list, every fourth
content word dropped past four, at most seven kept); ``paraphrase_body``: the same kind of rewrite of
the first prose sentence of the commit's body (the agent's answer; its evidence is the agent rows),
added after the first run showed the subject questions near 1.0 for the baselines.  The evidence of
a subject question is every log row of its commit.  Tune and test are split by a hash of the commit
id.  Do not change the rules to improve a number; ``--shift-dates`` moves the whole history to end
on 2026-11-24 (same spacing) to judge the gate without the age decay.

Everything is written through ``contextware.memory.team.share.import_memory`` (the ``import``
command's path: the package redacts, indexes and embeds), and recall runs through
``contextware.memory.recall.ask`` on the current code; the built store may be cached under
``$XDG_CACHE_HOME/contextware-bench/long_horizon`` keyed by the data, the generated rows and the
storage code (``--no-cache`` rebuilds).  For the test split only aggregates are ever printed, so
the held-out questions stay unseen while tuning.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from contextware.memory.recall import ask  # noqa: E402
from contextware.memory.team.share import import_memory, render_jsonl  # noqa: E402
from contextware.storage.config import DEFAULTS  # noqa: E402
from contextware.storage.project import Project  # noqa: E402
from contextware.storage.table_search import fts_rows  # noqa: E402

PACKAGE = "libharfbuzz0b"
PACKAGE_VERSION = "6.0.0+dfsg-3"
CHANGELOG = f"usr/share/doc/{PACKAGE}/changelog.gz"
BUILD_VERSION = 1  # bump when build_history or paraphrase changes (the cached stores are keyed on it)
CHUNK_CHARS = 1500
LIMIT = 10
SHIFT_TO = datetime(2026, 11, 24, 12, 0, tzinfo=timezone.utc)  # --shift-dates: the newest commit's new date
METHODS = ("recall_logs", "recall_all", "bm25", "bm25_lancedb", "cosine")


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "contextware-bench" / "long_horizon"


# -- data -------------------------------------------------------------------------------------------
def changelog_text() -> str:
    """The HarfBuzz git log from the Debian package: cached, else downloaded, else the installed copy."""
    cached = cache_dir() / f"harfbuzz-changelog-{PACKAGE_VERSION}.gz"
    if not cached.is_file():
        cached.parent.mkdir(parents=True, exist_ok=True)
        data = _from_deb(cached.parent) or _installed()
        if data is None:
            sys.exit(
                f"Cannot get {CHANGELOG}: `apt-get download {PACKAGE}={PACKAGE_VERSION}` failed and the "
                f"package is not installed (apt-get update first?)."
            )
        cached.write_bytes(data)
    return gzip.decompress(cached.read_bytes()).decode("utf-8", errors="replace")


def _from_deb(where: Path) -> bytes | None:
    try:
        subprocess.run(
            ["apt-get", "download", f"{PACKAGE}={PACKAGE_VERSION}"],
            cwd=where,
            check=True,
            capture_output=True,
            timeout=300,
        )
        deb = next(where.glob(f"{PACKAGE}_*.deb"))
        tar = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(deb)], check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(tar)) as tf:
            member = tf.extractfile(f"./{CHANGELOG}")
            return member.read() if member else None
    except (OSError, subprocess.SubprocessError, StopIteration, KeyError, tarfile.TarError):
        return None


def _installed() -> bytes | None:
    path = Path("/") / CHANGELOG
    try:
        out = subprocess.run(
            ["dpkg-query", "-W", "-f", "${Version}", PACKAGE], capture_output=True, text=True, timeout=30
        )
        return path.read_bytes() if out.stdout.strip() == PACKAGE_VERSION and path.is_file() else None
    except (OSError, subprocess.SubprocessError):
        return None


@dataclass
class Commit:
    sha: str
    author: str
    date: datetime
    subject: str
    body: list[str] = field(default_factory=list)  # paragraphs
    files: list[str] = field(default_factory=list)
    merge: bool = False


_STAT = re.compile(r"^ (\S.*?)\s+\|\s+(\d+|Bin)")


def parse_log(text: str) -> list[Commit]:
    """``git log --stat`` output, newest first, as commits."""
    commits: list[Commit] = []
    cur: Commit | None = None
    message: list[str] = []

    def close() -> None:
        if cur is None:
            return
        paragraphs = [p.strip() for p in "\n".join(message).split("\n\n") if p.strip()]
        if paragraphs:
            cur.subject = " ".join(paragraphs[0].split())
            cur.body = paragraphs[1:]
        commits.append(cur)

    for line in text.splitlines():
        if line.startswith("commit ") and len(line.split()) == 2:
            close()
            cur, message = Commit(sha=line.split()[1], author="", date=datetime.min, subject=""), []
        elif cur is None:
            continue
        elif line.startswith("Merge: "):
            cur.merge = True
        elif line.startswith("Author: "):
            cur.author = line[8:].split("<")[0].strip()
        elif line.startswith("Date: "):
            cur.date = datetime.strptime(line[6:].strip(), "%a %b %d %H:%M:%S %Y %z").astimezone(timezone.utc)
        elif line.startswith("    "):
            message.append(line[4:])
        elif line == "" and message:
            message.append("")
        else:
            m = _STAT.match(line)
            if m:
                cur.files.append(m.group(1).strip())
    close()
    return [c for c in commits if c.subject and c.date != datetime.min]


# -- questions (the rules; fixed before any result was seen) ------------------------------------------
_STOP_WORDS = (
    "a an the to of for in on at by with and or is be are was it its this that from as into when if not no "
    "we our some all more also only do does don't dont after before instead than so but just via per"
)
STOP = frozenset(_STOP_WORDS.split())
LEADS = {
    "fix": "how did we fix",
    "add": "when did we add",
    "remove": "why did we remove",
    "drop": "why did we drop",
    "delete": "why did we delete",
    "update": "what changed when we updated",
    "bump": "what changed when we bumped",
    "use": "when did we start using",
    "implement": "where did we implement",
    "move": "where did we move",
    "rename": "what did we rename",
    "make": "what made",
    "allow": "when did we allow",
    "support": "when did we support",
    "avoid": "how did we avoid",
    "handle": "how do we handle",
    "port": "how did we port",
    "simplify": "how did we simplify",
    "optimize": "how did we speed up",
    "refactor": "how did we restructure",
    "disable": "why did we turn off",
    "enable": "why did we turn on",
    "check": "where do we check",
    "test": "how do we test",
    "document": "where did we document",
    "ignore": "why do we ignore",
    "change": "why did we change",
    "set": "where do we set",
    "replace": "what did we replace",
    "clean": "what did we tidy in",
}
SYNONYMS = {
    "crash": "crashing",
    "crashes": "crashing",
    "bug": "defect",
    "warning": "compiler warnings",
    "warnings": "compiler warnings",
    "build": "compilation",
    "memory": "mem",
    "leak": "leaking",
    "tests": "test suite",
    "test": "testing",
    "function": "func",
    "buffer": "buf",
    "error": "failure",
    "errors": "failures",
    "overflow": "overrun",
    "faster": "quicker",
    "slow": "sluggish",
    "api": "interface",
    "docs": "documentation",
    "doc": "documentation",
    "typo": "misspelling",
    "unused": "dead",
    "variable": "var",
    "size": "length",
    "minor": "small",
    "cleanup": "tidy-up",
    "wrong": "incorrect",
    "missing": "absent",
    "new": "fresh",
    "old": "previous",
    "fuzzer": "fuzzing",
    "ci": "continuous integration",
}
_TAGS = re.compile(r"^((?:\[[^\]]{1,40}\]\s*)+)")
_WORD = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+#:/-]*[A-Za-z0-9_+#]|[A-Za-z0-9]")
_SKIP = re.compile(r"^(merge|revert|release|\d+(\.\d+)+$)", re.I)


def _lead_verb(word: str) -> str | None:
    w = word.lower()
    for suffix in ("", "s", "es", "ed", "d"):
        base = w[: len(w) - len(suffix)] if suffix and w.endswith(suffix) else w if not suffix else None
        if base and base in LEADS:
            return base
    return None


def subject_words(subject: str) -> tuple[list[str], list[str]]:
    """(tags, content words) of a commit subject."""
    m = _TAGS.match(subject)
    tags = re.findall(r"\[([^\]]+)\]", m.group(1)) if m else []
    rest = subject[m.end() :] if m else subject
    words = [w for w in _WORD.findall(rest) if w.lower() not in STOP]
    return tags, words


def paraphrase(subject: str) -> str | None:
    """The question a user would ask later about this commit, or None for a subject too thin to ask
    about (merges, reverts, releases, fewer than three content words besides the verb)."""
    if _SKIP.match(subject.strip()):
        return None
    tags, words = subject_words(subject)
    lead = "what do we know about"
    if words and _lead_verb(words[0]):
        lead = LEADS[_lead_verb(words[0]) or ""]
        words = words[1:]
    if len(words) < 3:
        return None
    words = [SYNONYMS.get(w.lower(), w) for w in words]
    if len(words) > 4:
        words = [w for i, w in enumerate(words) if i % 4 != 3]
    words = words[:7]
    where = f" in the {tags[0].strip()} code" if tags else ""
    return f"{lead} {' '.join(words)}{where}?"


_NOT_PROSE = re.compile(r"^(fixes|fixed|see|bug|closes|signed-off|co-authored|\(cherry|https?:|[0-9a-f]{7,}\b)", re.I)
_HASHLIKE = re.compile(r"^(https?:|[0-9a-f]{7,}$)|/", re.I)


def body_sentence(c: Commit) -> str | None:
    """The first sentence of the commit message's body that reads as prose, if any."""
    for para in c.body:
        text = " ".join(para.split())
        if _NOT_PROSE.match(text) or text.startswith(("*", "-", ">", "$")):
            continue
        return re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0]
    return None


def paraphrase_body(c: Commit) -> str | None:
    """The harder family (added after the first run showed the subject questions saturated for the
    baselines): a question about what the agent's answer explained, from the first sentence of the
    body: the lead verb as in ``paraphrase``, synonyms, every third content word dropped, at most
    six kept; None below four content words."""
    sentence = body_sentence(c)
    if sentence is None:
        return None
    words = [w for w in _WORD.findall(sentence) if w.lower() not in STOP and not _HASHLIKE.search(w)]
    lead = "what was said about"
    if words and _lead_verb(words[0]):
        lead = LEADS[_lead_verb(words[0]) or ""]
        words = words[1:]
    if len(words) < 4:
        return None
    words = [SYNONYMS.get(w.lower(), w) for w in words]
    words = [w for i, w in enumerate(words) if i % 3 != 2][:6]
    return f"{lead} {' '.join(words)}?"


def _body_words(c: Commit) -> set[str]:
    sentence = body_sentence(c) or ""
    return {w.lower() for w in _WORD.findall(sentence) if w.lower() not in STOP}


# -- the history --------------------------------------------------------------------------------------
def _h(kind: str, key: str) -> int:
    return int(hashlib.sha1(f"{kind}:{key}".encode()).hexdigest()[:8], 16)


def _id(prefix: str, key: str) -> str:
    return f"{prefix}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def _iso(d: datetime) -> str:
    return d.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _chunks(text: str, size: int = CHUNK_CHARS) -> list[str]:
    out: list[str] = []
    for para in text.split("\n\n"):
        while len(para) > size:
            cut = para.rfind(" ", 0, size)
            cut = cut if cut > size // 2 else size
            out.append(para[:cut])
            para = para[cut:].lstrip()
        if out and len(out[-1]) + 2 + len(para) <= size:
            out[-1] = f"{out[-1]}\n\n{para}"
        elif para:
            out.append(para)
    return out or [text[:size]]


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def _session(c: Commit) -> str:
    author = re.sub(r"[^A-Za-z0-9]+", "-", c.author).strip("-").lower() or "someone"
    return f"hb-{c.date:%Y%m%d}-{author}"[:128]


def commit_rows(c: Commit) -> list[dict]:
    """The user's request and the agent's answer for one commit, as log rows."""
    session, when = _session(c), _iso(c.date)
    answer = "\n\n".join(c.body)
    files = f"Files changed: {', '.join(c.files[:40])}" + (
        f" and {len(c.files) - 40} more" if len(c.files) > 40 else ""
    )
    answer = f"{answer}\n\n{files}".strip() if c.files else answer or f"Done: {c.subject}"
    rows: list[dict[str, Any]] = [
        {"id": _id("log", c.sha + ":user"), "session_id": session, "role": "user", "text": c.subject}
    ]
    parts = _chunks(answer)
    rows += [
        {
            "id": _id("log", f"{c.sha}:agent:{i}"),
            "session_id": session,
            "role": "agent",
            "text": part,
            "chunk_index": i,
            "chunk_count": len(parts),
        }
        for i, part in enumerate(parts)
    ]
    for r in rows:
        r.update(source="bench-long-horizon", created_at=when, updated_at=when)
    return rows


@dataclass
class History:
    rows: list[dict]  # import rows (logs, episodes, facts)
    questions: list[dict]  # {q, split, evidence: [log ids] (empty: unanswerable), echoed, sha}
    first: datetime
    last: datetime
    commits: int
    sessions: int
    latest_fact: str


def build_history(commits: list[Commit], limit_rows: int) -> History:
    """The store and the questions (see the module docstring); deterministic."""
    commits = [c for c in commits if not c.merge]  # newest first
    held: list[Commit] = []
    stored: list[tuple[Commit, list[dict]]] = []
    n_logs = 0
    for c in commits:
        q = paraphrase(c.subject)
        if q is not None and _h("holdout", c.sha) % 8 == 0:
            held.append(c)
            continue
        rows = commit_rows(c)
        echoes = 1 + _h("echo-n", c.sha) % 3 if q is not None and _h("echo", c.sha) % 5 == 0 else 0
        if n_logs + len(rows) + echoes > limit_rows:
            break
        for j in range(echoes):
            when = _iso(c.date + timedelta(days=7 * (j + 1), hours=j))
            rows.append(
                {
                    "id": _id("log", f"{c.sha}:echo:{j}"),
                    "session_id": f"hb-echo-{c.sha[:10]}-{j}",
                    "role": "user",
                    "text": q,
                    "source": "bench-long-horizon",
                    "created_at": when,
                    "updated_at": when,
                }
            )
        stored.append((c, rows))
        n_logs += len(rows)
    stored.reverse()  # oldest first
    first, last = stored[0][0].date, stored[-1][0].date
    held = [c for c in held if first <= c.date <= last]

    questions: list[dict] = []
    for c, rows in stored:
        q = paraphrase(c.subject)
        if q is None:
            continue
        evidence = [r["id"] for r in rows if r["session_id"] == _session(c)]
        echoed = sum(1 for r in rows if r["session_id"].startswith("hb-echo-"))
        split = "tune" if _h("split", c.sha) % 2 == 0 else "test"
        questions.append(
            {"q": q, "family": "subject", "split": split, "evidence": evidence, "echoes": echoed, "sha": c.sha}
        )
        qb = paraphrase_body(c)
        if qb is not None:
            agent = [r["id"] for r in rows if r["session_id"] == _session(c) and r["role"] == "agent"]
            questions.append({"q": qb, "family": "body", "split": split, "evidence": agent, "echoes": 0, "sha": c.sha})
    stored_words = [{w.lower() for w in subject_words(c.subject)[1]} for c, _ in stored]
    stored_body = [_body_words(c) for c, _ in stored]
    for c in held:
        split = "tune" if _h("split", c.sha) % 2 == 0 else "test"
        words = {w.lower() for w in subject_words(c.subject)[1]}
        if not any(_jaccard(words, s) >= 0.5 for s in stored_words):
            q = paraphrase(c.subject)
            questions.append({"q": q, "family": "subject", "split": split, "evidence": [], "echoes": 0, "sha": c.sha})
        qb, body = paraphrase_body(c), _body_words(c)
        if qb is not None and not any(_jaccard(body, s) >= 0.5 for s in stored_body):
            questions.append({"q": qb, "family": "body", "split": split, "evidence": [], "echoes": 0, "sha": c.sha})

    out = [r for _, rows in stored for r in rows]
    # releases: an episode (extractive digest of the commits since the previous one) and a fact chain
    releases = [i for i, (c, _) in enumerate(stored) if re.fullmatch(r"\d+\.\d+\.\d+", c.subject.strip())]
    prev_i, prev_fact = 0, None
    facts: list[dict] = []
    for i in releases:
        c = stored[i][0]
        subjects = [s.subject for s, _ in stored[prev_i:i] if not re.fullmatch(r"[\d.]+", s.subject.strip())]
        summary = "; ".join(subjects)[:1400] or "No changes recorded."
        when = _iso(c.date)
        out.append(
            {
                "id": _id("episode", c.sha),
                "goal": f"Release HarfBuzz {c.subject.strip()}",
                "result": "success",
                "category": "release",
                "summary": f"Changes since the previous release: {summary}",
                "topics": ["release"],
                "source": "bench-long-horizon",
                "created_at": when,
                "updated_at": when,
            }
        )
        fid = _id("fact", c.sha)
        facts.append(
            {
                "id": fid,
                "kind": "note",
                "text": f"The latest HarfBuzz release is {c.subject.strip()}, tagged on {c.date:%Y-%m-%d}.",
                "topics": ["release"],
                "status": "active",
                "supersedes": prev_fact,
                "superseded_by": None,
                "source": "bench-long-horizon",
                "created_at": when,
                "updated_at": when,
            }
        )
        if prev_fact is not None:
            facts[-2].update(status="superseded", superseded_by=fid)
        prev_i, prev_fact = i + 1, fid
    out += facts
    return History(
        rows=out,
        questions=questions,
        first=first,
        last=last,
        commits=len(stored),
        sessions=len({r["session_id"] for r in out if "session_id" in r}),
        latest_fact=prev_fact or "",
    )


# -- the store ----------------------------------------------------------------------------------------
def code_version() -> str:
    """A hash of the code that decides what a stored row looks like (not recall: it always runs live)."""
    h = hashlib.sha256(str(BUILD_VERSION).encode())
    paths = [
        *sorted((REPO / "contextware" / "storage").glob("*.py")),
        REPO / "contextware" / "memory" / "team" / "share.py",
        REPO / "contextware" / "memory" / "records.py",
        REPO / "contextware" / "core" / "redact.py",
    ]
    for p in paths:
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def load_store(project: Project, history: History, use_cache: bool) -> tuple[float, bool]:
    """Import the rows (or copy a cached store built from the same rows by the same code); seconds
    taken and whether the cache served."""
    jsonl = render_jsonl(history.rows)
    key = hashlib.sha256((jsonl + code_version()).encode()).hexdigest()[:20]
    cached = cache_dir() / "stores" / key
    t0 = time.perf_counter()
    if use_cache and (cached / "done").is_file():
        shutil.copytree(cached / "data", project.data_dir, dirs_exist_ok=True)
        return time.perf_counter() - t0, True
    report = import_memory(project, jsonl, source="long_horizon.jsonl")
    if report.get("degraded"):
        sys.exit(f"the embedding model did not load: {report['degraded']}")
    took = time.perf_counter() - t0
    if use_cache:
        shutil.rmtree(cached, ignore_errors=True)
        shutil.copytree(project.data_dir, cached / "data")
        (cached / "done").write_text(json.dumps({"rows": len(history.rows)}), encoding="utf-8")
    return took, False


# -- baselines ----------------------------------------------------------------------------------------
_TOKEN = re.compile(r"[a-z0-9]+")


class BM25:
    """Okapi BM25 (k1 1.2, b 0.75) over the log texts, lower-cased alphanumeric words, no stemming."""

    def __init__(self, ids: list[str], texts: list[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.ids, self.k1, self.b = ids, k1, b
        self.tf = [Counter(_TOKEN.findall(t.lower())) for t in texts]
        self.len = [sum(c.values()) for c in self.tf]
        self.avg = sum(self.len) / max(1, len(self.len))
        df: Counter[str] = Counter()
        for c in self.tf:
            df.update(c.keys())
        n = len(texts)
        self.idf = {w: math.log(1 + (n - d + 0.5) / (d + 0.5)) for w, d in df.items()}
        self.postings: dict[str, list[int]] = {}
        for i, c in enumerate(self.tf):
            for w in c:
                self.postings.setdefault(w, []).append(i)

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        scores: dict[int, float] = {}
        for w in set(_TOKEN.findall(query.lower())):
            idf = self.idf.get(w)
            if idf is None:
                continue
            for i in self.postings[w]:
                f = self.tf[i][w]
                norm = f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * self.len[i] / self.avg))
                scores[i] = scores.get(i, 0.0) + idf * norm
        best = sorted(scores.items(), key=lambda kv: -kv[1])[:k]
        return [(self.ids[i], s) for i, s in best]


def read_logs(project: Project) -> tuple[list[str], list[str], Any]:
    import numpy as np

    table = project.db.open_table("logs")
    assert table is not None, "no logs were stored"

    def run() -> Any:
        return table.search().select(["id", "text", "vector"]).limit(None).to_arrow()

    data = project.db.read(run)
    ids = data.column("id").to_pylist()
    texts = data.column("text").to_pylist()
    vecs = np.asarray(data.column("vector").to_pylist(), dtype=np.float32)
    vecs /= np.clip(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12, None)
    return ids, texts, vecs


# -- metrics ------------------------------------------------------------------------------------------
def rank_of(found: list[str], evidence: set[str]) -> int | None:
    return next((i + 1 for i, rid in enumerate(found) if rid in evidence), None)


def summarize(ranks: list[int | None]) -> dict[str, float | None]:
    if not ranks:
        return dict.fromkeys(("R@1", "R@5", "R@10", "MRR"))
    n = len(ranks)
    return {
        "R@1": round(sum(1 for r in ranks if r is not None and r <= 1) / n, 3),
        "R@5": round(sum(1 for r in ranks if r is not None and r <= 5) / n, 3),
        "R@10": round(sum(1 for r in ranks if r is not None and r <= 10) / n, 3),
        "MRR": round(sum(1 / r for r in ranks if r is not None and r <= 10) / n, 3),
    }


def auc(pos: list[float], neg: list[float]) -> float | None:
    """ROC AUC: the chance that an answerable question's score beats an unanswerable one's (ties half)."""
    if not pos or not neg:
        return None
    wins = sum((p > q) + 0.5 * (p == q) for p in pos for q in neg)
    return round(wins / (len(pos) * len(neg)), 3)


def evaluate(project: Project, history: History, questions: list[dict], details: bool) -> dict[str, Any]:
    import numpy as np

    ids, texts, vecs = read_logs(project)
    bm25 = BM25(ids, texts)
    logs_table = project.db.open_table("logs")
    if logs_table is None:
        raise SystemExit("The store has no logs table: nothing was imported.")
    qvecs = project.embedder.embed([q["q"] for q in questions]) if questions else np.zeros((0, vecs.shape[1]))
    gate = DEFAULTS["recall_min_confidence"]
    per: list[dict] = []
    ask_s = 0.0
    for q, qv in zip(questions, qvecs, strict=True):
        t0 = time.perf_counter()
        logs = ask(project, q["q"], scope="logs", limit=LIMIT, min_confidence=0)
        every = ask(project, q["q"], limit=LIMIT, min_confidence=0)
        default = ask(project, q["q"], limit=LIMIT)
        ask_s += time.perf_counter() - t0
        try:
            lance = fts_rows(project.db, "logs", logs_table, q["q"], None, LIMIT)
        except Exception:  # noqa: BLE001 - a question the index cannot parse finds nothing
            lance = []
        sims = vecs @ np.asarray(qv, dtype=np.float32)
        top = np.argsort(-sims)[:LIMIT]
        bm = bm25.search(q["q"], LIMIT)
        found = {
            "recall_logs": [r["id"] for r in logs["results"]],
            "recall_all": [r["id"] for r in every["results"]],
            "bm25": [rid for rid, _ in bm],
            "bm25_lancedb": [r["id"] for r in lance],
            "cosine": [ids[i] for i in top],
        }
        evidence = set(q["evidence"])
        per.append(
            {
                **q,
                "ranks": {m: rank_of(found[m], evidence) for m in METHODS} if evidence else {},
                "top": {
                    "recall_logs": max((r["confidence"] for r in logs["results"]), default=0.0),
                    "recall_all": max((r["confidence"] for r in every["results"]), default=0.0),
                    "recall_all_score": max((r["score"] for r in every["results"]), default=0.0),
                    "bm25": bm[0][1] if bm else 0.0,
                    "cosine": float(sims[top[0]]) if len(top) else 0.0,
                },
                "short": {
                    "recall_logs": len(logs["results"]) < LIMIT,
                    "recall_all": len(every["results"]) < LIMIT,
                    "default": len(default["results"]) < LIMIT,
                },
                "answerable_default": bool(default["answerable"]),
                "first_collection": every["results"][0]["collection"] if every["results"] else None,
            }
        )
    ans = [p for p in per if p["evidence"]]
    una = [p for p in per if not p["evidence"]]
    families: dict[str, Any] = {}
    for fam in ("subject", "body"):
        fa = [p for p in ans if p["family"] == fam]
        echoed = [p for p in fa if p["echoes"]]
        families[fam] = {
            "questions": {
                "answerable": len(fa),
                "unanswerable": sum(1 for p in una if p["family"] == fam),
                "echoed": len(echoed),
            },
            "methods": {m: summarize([p["ranks"][m] for p in fa]) for m in METHODS},
            "echoed_R@10": {m: summarize([p["ranks"][m] for p in echoed])["R@10"] for m in METHODS},
        }
    report: dict[str, Any] = {
        "questions": {"answerable": len(ans), "unanswerable": len(una)},
        "methods": {m: summarize([p["ranks"][m] for p in ans]) for m in METHODS},
        "families": families,
        "short_lists": {
            k: round(sum(p["short"][k] for p in ans) / max(1, len(ans)), 3)
            for k in ("recall_logs", "recall_all", "default")
        },
        "gate": {
            "default_min_confidence": gate,
            "answerable_silenced": round(sum(not p["answerable_default"] for p in ans) / max(1, len(ans)), 3),
            "unanswerable_silenced": round(sum(not p["answerable_default"] for p in una) / max(1, len(una)), 3)
            if una
            else None,
            "auc": {
                m: auc([p["top"][m] for p in ans], [p["top"][m] for p in una])
                for m in ("recall_all", "recall_all_score", "recall_logs", "bm25", "cosine")
            },
        },
        "first_result_collection": dict(Counter(str(p["first_collection"]) for p in per)),
        "recall_ms_per_question": round(ask_s * 1000 / max(1, 3 * len(per)), 1),
    }
    if details:
        report["details"] = [
            {
                "q": p["q"],
                "family": p["family"],
                "sha": p["sha"][:12],
                "evidence": len(p["evidence"]),
                "echoes": p["echoes"],
                **p["ranks"],
            }
            | {"top_conf": round(p["top"]["recall_all"], 3), "answerable_default": p["answerable_default"]}
            for p in per
        ]
    return report


def latest_release_check(project: Project, history: History) -> dict[str, Any]:
    """Is the newest "latest release" fact (the end of a supersession chain) recall's first fact?"""
    if not history.latest_fact:
        return {}
    out = ask(project, "which HarfBuzz version is the latest release?", limit=LIMIT, min_confidence=0)
    facts = [r["id"] for r in out["results"] if r["collection"] == "facts"]
    return {
        "newest_fact_first_among_facts": bool(facts) and facts[0] == history.latest_fact,
        "rank_in_all": rank_of([r["id"] for r in out["results"]], {history.latest_fact}),
    }


# -- main ---------------------------------------------------------------------------------------------
def pick(questions: list[dict], split: str, answerable: int, unanswerable: int) -> list[dict]:
    """Up to ``answerable`` and ``unanswerable`` questions of each family, in a fixed hashed order."""
    chosen = [q for q in questions if split == "all" or q["split"] == split]
    chosen.sort(key=lambda q: _h("pick", q["family"] + q["sha"]))
    out: list[dict] = []
    for fam in ("subject", "body"):
        mine = [q for q in chosen if q["family"] == fam]
        out += [q for q in mine if q["evidence"]][:answerable] + [q for q in mine if not q["evidence"]][:unanswerable]
    return out


def render(report: dict[str, Any]) -> str:
    lines = [
        f"long_horizon: split {report['split']}, dates {report['dates']}, {report['store']['logs']} logs "
        f"({report['store']['first']} .. {report['store']['last']}), {report['store']['sessions']} sessions, "
        f"{report['store']['episodes']} episodes, {report['store']['facts']} facts",
        f"questions: {report['questions']}",
    ]
    for fam, part in report["families"].items():
        lines += [
            "",
            f"{fam} questions: {part['questions']}",
            "| method | R@1 | R@5 | R@10 | MRR | R@10 echoed |",
            "|---|---|---|---|---|---|",
        ]
        for m, s in part["methods"].items():
            lines.append(f"| {m} | {s['R@1']} | {s['R@5']} | {s['R@10']} | {s['MRR']} | {part['echoed_R@10'][m]} |")
    lines += ["", "all answerable questions:", "| method | R@1 | R@5 | R@10 | MRR |", "|---|---|---|---|---|"]
    for m, s in report["methods"].items():
        lines.append(f"| {m} | {s['R@1']} | {s['R@5']} | {s['R@10']} | {s['MRR']} |")
    g = report["gate"]
    lines += [
        "",
        f"--limit 10 returning fewer than 10 (answerable): {report['short_lists']}",
        f"gate at default min_confidence {g['default_min_confidence']}: answerable silenced "
        f"{g['answerable_silenced']}, unanswerable silenced {g['unanswerable_silenced']}",
        f"gate ROC AUC of the best score (answerable vs unanswerable): {g['auc']}",
        f"first result's collection: {report['first_result_collection']}",
        f"latest release: {report.get('latest_release')}",
        f"times: build {report['seconds']['build']} s (cached: {report['cached']}), "
        f"evaluate {report['seconds']['evaluate']} s, recall {report['recall_ms_per_question']} ms a call",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", choices=("tune", "test", "all"), default="test")
    ap.add_argument("--limit-rows", type=int, default=4000, help="log rows in the store (default 4000)")
    ap.add_argument("--questions", type=int, default=150, help="answerable questions per run (default 150)")
    ap.add_argument("--unanswerable", type=int, default=60, help="unanswerable questions per run (default 60)")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.add_argument("--details", action="store_true", help="per-question lines (only with --split tune)")
    ap.add_argument("--no-cache", action="store_true", help="build the store anew and do not cache it")
    ap.add_argument(
        "--shift-dates",
        action="store_true",
        help=f"move every date so the newest commit falls on {SHIFT_TO:%Y-%m-%d} (age out of the picture)",
    )
    ap.add_argument("--smoke", action="store_true", help="a few dozen rows and a handful of questions")
    args = ap.parse_args(argv)
    if args.details and args.split != "tune":
        ap.error("--details is for the tune split only: the test split's questions stay unseen")
    if args.smoke:
        args.limit_rows, args.questions, args.unanswerable, args.no_cache = min(args.limit_rows, 40), 4, 2, True
        args.split = "all" if args.split == "test" else args.split

    t_start = time.perf_counter()
    commits = parse_log(changelog_text())
    if args.shift_dates:  # keep the spacing, move the newest commit to SHIFT_TO
        delta = SHIFT_TO - max(c.date for c in commits)
        for c in commits:
            c.date += delta
    history = build_history(commits, args.limit_rows)
    questions = pick(history.questions, args.split, args.questions, args.unanswerable)
    print(f"{len(history.rows)} rows, {len(questions)} questions", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CONTEXTWARE_HOME"] = str(Path(tmp) / "home")
        os.environ["CONTEXTWARE_SERVICE"] = "off"
        project = Project.open(tmp)
        build_s, cached = load_store(project, history, use_cache=not args.no_cache)
        print(f"store ready in {build_s:.1f} s (cached: {cached})", file=sys.stderr)
        t0 = time.perf_counter()
        report = evaluate(project, history, questions, args.details)
        report["latest_release"] = latest_release_check(project, history)
        eval_s = time.perf_counter() - t0
    counts = Counter(r["id"].split("-")[0] for r in history.rows)
    report = {
        "split": args.split,
        "dates": f"shifted to end on {SHIFT_TO:%Y-%m-%d}" if args.shift_dates else "real",
        "data": f"{PACKAGE} {PACKAGE_VERSION} {CHANGELOG}",
        "store": {
            "logs": counts["log"],
            "episodes": counts["episode"],
            "facts": counts["fact"],
            "commits": history.commits,
            "sessions": history.sessions,
            "first": f"{history.first:%Y-%m-%d}",
            "last": f"{history.last:%Y-%m-%d}",
        },
        "cached": cached,
        "seconds": {
            "build": round(build_s, 1),
            "evaluate": round(eval_s, 1),
            "total": round(time.perf_counter() - t_start, 1),
        },
        **report,
    }
    print(json.dumps(report, indent=1) if args.json else render(report))


if __name__ == "__main__":
    main()
