"""What of each memory is embedded and what is full-text indexed, and how a question is widened
before it is searched.

These views decide retrieval quality as much as the fusion in ``memory/recall.py`` does; both are measured
by ``bench/recall_quality.py``.

* ``embedding_text``: the row's topics lead its text ("testing, pytest: Run backend tests ...").  The
  topics name what the memory is *about* in the words an agent asks with, which the body often only
  implies; leading with them measurably pulls paraphrased questions closer.
* ``search_text``: body plus kind/category/result/topics, stemmed and stop-worded by the index.
* ``expand_query``: a small, generic software-engineering thesaurus (``FAMILIES``).  A question says
  "ship", "build server" or "hangs" where the memory says "deploy", "CI" or "deadlock"; each word of
  the question that belongs to a family brings the rest of its family along.  The families are
  ordinary engineering vocabulary (concepts and the common tools that implement them), not words of
  any one project; add families, never project names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from contextware.core.words import words

# One family a line: words an engineer uses interchangeably for one concept, plus the common tools
# that embody it.  Lower case, single words (the index stems, so "deploys" matches "deploy").
FAMILIES = """
format formatter formatting reformat prettier black style
lint linter linting eslint flake8 ruff warning noqa
type typing types annotation annotations typed mypy pyright typecheck checker
test tests testing spec specs suite pytest jest vitest unittest
ci pipeline workflow actions jenkins build
deploy deployment deploys release releases ship shipping rollout publish
production prod live
staging preprod
rollback revert
hang hangs hung stuck freeze frozen froze deadlock deadlocked timeout stall stalled forever blocking lock
crash crashes crashed dies died killed oom segfault
slow latency performance speed faster
database db datastore postgres postgresql mysql sqlite persistence
migration migrations migrate alembic schema
queue worker workers job jobs task tasks celery sidekiq broker rabbitmq
cache caching memcached redis
error errors exception exceptions traceback sentry rollbar
log logs logging logger structlog
secret secrets credential credentials password token key
config configuration setting settings env environment variable
commit commits hook hooks precommit
branch branches pr merge review
dependency dependencies package packages library libraries lockfile upgrade bump
frontend ui web browser react client
backend server api service endpoint
container containers docker compose image kubernetes k8s pod ecs
infrastructure terraform cloud aws iac provision
auth authentication login signin sso oauth session
permission permissions authorization access role tenant organization multitenant scope
delete remove removal drop purge void
duplicate duplicates twice idempotent idempotency dedupe deduplicate
time clock timezone datetime utc freezegun
mock mocks stub fake fixture fixtures factory seed
coverage covered exercised
doc docs documentation readme
email emails mail smtp
webhook webhooks callback event events
id identifier number uuid
local locally machine laptop dev development
monitor monitoring alert alerts metrics dashboard
query queries sql orm sqlalchemy
schedule scheduled cron periodic nightly
retry retries backoff
memory ram oom
"""

_RELATED: dict[str, list[str]] = {}
for _line in FAMILIES.strip().splitlines():
    _words = _line.split()
    for _w in _words:
        _RELATED.setdefault(_w, []).extend(x for x in _words if x != _w)
_IDENT_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def related_words(word: str) -> list[str]:
    """The other members of the thesaurus families of one lower-case word ("deploys" counts as "deploy")."""
    key = word if word in _RELATED else word[:-1] if word.endswith("s") and word[:-1] in _RELATED else None
    return _RELATED.get(key or "", [])


def expand_query(query: str) -> str:
    """The question followed by the other members of every family one of its words belongs to
    (the question itself unchanged when none does)."""
    said = words(query)
    seen, extra = set(said), []
    for word in said:
        for other in related_words(word):
            if other not in seen:
                seen.add(other)
                extra.append(other)
    return f"{query} {' '.join(extra)}" if extra else query


_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")
# Lines that import something, in most languages.
_IMPORT_LINE = re.compile(
    r"^[ \t]*(?:import|from|#[ \t]*include|require|use|using|extern crate|library|source)\b.*$"
    r"|^.*\b(?:require|import)\(.*$",
    re.M,
)


def import_words(text: str) -> list[str]:
    """The words (4+ characters, lower case) of a file's import lines: the briefing ranks a file
    as central when many others name its module there (stored per row, so that it never re-reads
    file contents)."""
    return sorted({w.lower() for w in _WORDS.findall(" ".join(_IMPORT_LINE.findall(text)))})


def identifier_words(text: str) -> str:
    """``src/http_client.py`` -> "src http client py"; ``parseHTTPResponse`` -> "parse HTTP Response":
    the words a question uses for a path or a symbol name."""
    return " ".join(_IDENT_PART.findall(text))


_MIXED_CASE = re.compile(r"\b[A-Za-z][a-z0-9]*[A-Z][A-Za-z0-9]*\b|\b[A-Z]{2,}[a-z][A-Za-z0-9]*\b")


def split_identifiers(text: str) -> str:
    """Each camelCase or PascalCase identifier followed by its words (``parseHTTPResponse`` ->
    "parseHTTPResponse parse HTTP Response"), in place so that term frequencies hold: the full-text
    index already splits ``snake_case`` and ``kebab-case`` at their punctuation, not case changes."""
    return _MIXED_CASE.sub(lambda m: f"{m.group(0)} {identifier_words(m.group(0))}", text)


def _text(row: Mapping[str, object], key: str) -> str:
    """A text column's value, '' when absent or null."""
    value = row.get(key)
    return value if isinstance(value, str) else ""


def _texts(row: Mapping[str, object], key: str) -> list[str]:
    """A list-of-texts column's values, [] when absent or null."""
    value = row.get(key)
    if isinstance(value, str) or not isinstance(value, Iterable):
        return []
    return [str(v) for v in value]


def code_embedding_text(row: Mapping[str, object]) -> str:
    """Path, summary, then symbol names: the summary says what the file is for in prose, the path
    and names anchor it (the model reads ~256 tokens, so the longest part goes last)."""
    symbols = ", ".join(identifier_words(s) for s in _texts(row, "symbols")[:60])
    asked = " ".join(_texts(row, "questions"))  # a Gemini summary's questions the file answers
    return f"{identifier_words(_text(row, 'file_path'))}. {_text(row, 'summary')} {asked} Defines: {symbols}"


def code_search_text(row: Mapping[str, object], content: str, limit: int) -> str:
    """Path and symbol names split into words, the summary, and the file's content (up to ``limit``
    characters): questions name behaviour that a summary leaves out."""
    symbols = " ".join(identifier_words(s) for s in _texts(row, "symbols"))
    body = split_identifiers(content[:limit])
    asked = " ".join(_texts(row, "questions"))
    return f"{identifier_words(_text(row, 'file_path'))} {symbols} {_text(row, 'summary')} {asked} {body}"


def embedding_text(collection: str, row: Mapping[str, object]) -> str:
    if collection == "code_index":
        return code_embedding_text(row)
    topics = ", ".join(_texts(row, "topics"))
    lead = f"{topics}: " if topics else ""
    if collection == "episodes":
        return f"{lead}{_text(row, 'goal')}. {_text(row, 'summary')}"
    if collection == "offloads":
        return offload_embedding_text(row)
    if collection == "logs" and _text(row, "prompt"):  # an answer with the words it answers: one exchange
        return f"{_text(row, 'prompt')[:EXCHANGE_PROMPT_CHARS]}\n{_text(row, 'text')}"
    return f"{lead}{_text(row, 'text')}"


def search_text(collection: str, row: Mapping[str, object]) -> str:
    topics = " ".join(_texts(row, "topics"))
    if collection == "facts":
        return f"{_text(row, 'text')} {_text(row, 'kind')} {topics}".strip()
    if collection == "episodes":
        goal, summary, category, result = (_text(row, k) for k in ("goal", "summary", "category", "result"))
        return f"{goal} {summary} {category} {result} {topics}".strip()
    if collection == "offloads":
        return offload_search_text(row)
    if collection == "logs" and _text(row, "prompt"):
        return f"{_text(row, 'prompt')[:EXCHANGE_PROMPT_CHARS]} {_text(row, 'text')}"
    return _text(row, "text")


EXCHANGE_PROMPT_CHARS = 500  # of the question an answer embeds: enough to say what was asked


OFFLOAD_PROMPT_CHARS = 300


def offload_embedding_text(row: Mapping[str, object]) -> str:
    """Topics, the question asked (its start: later questions resemble it) and the summary of the
    answer (what was learned)."""
    topics = ", ".join(_texts(row, "topics"))
    lead = f"{topics}: " if topics else ""
    prompt = _text(row, "prompt").strip()
    if len(prompt) > OFFLOAD_PROMPT_CHARS:
        prompt = prompt[:OFFLOAD_PROMPT_CHARS].rsplit(" ", 1)[0]
    return f"{lead}{prompt}\n{_text(row, 'summary')}".strip()


def offload_search_text(row: Mapping[str, object]) -> str:
    """Prompt, summary, topics, session and feature names, and the source paths split into words."""
    sources = " ".join(identifier_words(p) for p in _texts(row, "source_paths"))
    parts = [
        _text(row, "prompt"),
        _text(row, "summary"),
        " ".join(_texts(row, "topics")),
        _text(row, "session_name"),
        _text(row, "feature"),
        sources,
    ]
    return " ".join(p for p in parts if p).strip()
