"""A small fake of the Gemini REST API on 127.0.0.1, for running the REAL Gemini CLI offline.

Point the CLI at it with ``GOOGLE_GEMINI_BASE_URL=<api.base_url>`` and ``GEMINI_API_KEY=...`` (see
``tests/support/gemini_fixtures.py``).  It answers:

- ``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` — a chat turn, scripted with
  :class:`Reply` objects (queue, callable or default);
- ``POST …:generateContent`` — utility calls (router, complexity, next speaker, titles); JSON-mode
  calls get JSON that fits the ``responseJsonSchema``;
- ``POST …:countTokens`` — ``{"totalTokens": N}``.

Every request is recorded (:attr:`FakeGeminiAPI.requests`) so tests can assert what the CLI sent.

:func:`summaries_responder` answers the code summariser's batch requests
(``contextware.codeindex.gemini_summary``) with valid JSON per file; see its docstring.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Reply:
    """One scripted answer to a chat turn (``streamGenerateContent``)."""

    text: str | list[str] = "OK"  # a list is sent as several SSE events
    prompt_tokens: int = 10
    candidates_tokens: int = 5
    cached_tokens: int = 0
    thoughts_tokens: int = 0
    total_tokens: int | None = None  # default: prompt + candidates + thoughts
    status: int = 200  # != 200: an HTTP error {"error": {...}} with this status
    error_message: str = "Scripted error from the fake Gemini API."
    delay: float = 0.0  # seconds to wait before answering (for timeouts)
    raw: str | bytes | None = None  # sent verbatim as the body (malformed output)
    finish_reason: str | None = "STOP"

    def usage(self) -> dict[str, int]:
        total = self.total_tokens
        if total is None:
            total = self.prompt_tokens + self.candidates_tokens + self.thoughts_tokens
        return {
            "promptTokenCount": self.prompt_tokens,
            "candidatesTokenCount": self.candidates_tokens,
            "totalTokenCount": total,
            "cachedContentTokenCount": self.cached_tokens,
            "thoughtsTokenCount": self.thoughts_tokens,
        }


@dataclass
class RecordedRequest:
    method: str
    path: str  # without the query string
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON, or the raw text when it is not JSON

    @property
    def model(self) -> str | None:
        tail = self.path.rsplit("/models/", 1)
        return tail[1].split(":", 1)[0] if len(tail) == 2 else None

    @property
    def method_name(self) -> str:
        return self.path.rsplit(":", 1)[-1] if ":" in self.path else ""

    def texts(self) -> list[str]:
        """Every ``text`` part of the user turns in ``contents``."""
        out: list[str] = []
        body = self.body if isinstance(self.body, dict) else {}
        for content in body.get("contents") or []:
            if content.get("role", "user") != "user":
                continue
            for part in content.get("parts") or []:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    out.append(part["text"])
        return out


ReplySource = Callable[[RecordedRequest], "Reply | str"]


def _json_for_schema(schema: dict) -> dict:
    """JSON that fits the utility-call schemas the CLI uses, or a generic fit for others."""
    props = (schema or {}).get("properties") or {}
    if "model_choice" in props:
        return {"reasoning": "Simple request.", "model_choice": "flash"}
    if "complexity_score" in props:
        return {"complexity_reasoning": "Simple request.", "complexity_score": 10}
    if "next_speaker" in props:
        return {"reasoning": "The model answered; the user speaks next.", "next_speaker": "user"}
    out: dict[str, Any] = {}
    for name, spec in props.items():
        kind = (spec or {}).get("type")
        kind = kind[0] if isinstance(kind, list) else kind
        if (spec or {}).get("enum"):
            out[name] = spec["enum"][0]
        elif kind in ("integer", "number"):
            out[name] = 1
        elif kind == "boolean":
            out[name] = False
        elif kind == "array":
            out[name] = []
        elif kind == "object":
            out[name] = {}
        else:
            out[name] = "fake"
    return out


class FakeGeminiAPI:
    """Programmable fake; use as a context manager or call :meth:`start` / :meth:`stop`."""

    def __init__(self, default_reply: Reply | None = None) -> None:
        self.default_reply = default_reply or Reply()
        self.replies: deque[Reply | str] = deque()
        self.handler: ReplySource | None = None  # wins over the queue when set
        self.requests: list[RecordedRequest] = []
        self.utility_text = "Fake session title"
        self.count_tokens = 42
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        """The request handler (a fake of another API built on this one returns its own)."""
        return _Handler

    def start(self) -> FakeGeminiAPI:
        Handler = type("Handler", (self.handler_class(),), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-gemini-api", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes delayed replies
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeGeminiAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "fake API not started"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- scripting ---------------------------------------------------------------------------
    def push(self, *replies: Reply | str) -> None:
        """Queue replies for the next chat turns (a str is ``Reply(text=...)``)."""
        with self._lock:
            self.replies.extend(replies)

    def next_reply(self, request: RecordedRequest) -> Reply:
        if self.handler is not None:
            reply: Reply | str = self.handler(request)
        else:
            with self._lock:
                reply = self.replies.popleft() if self.replies else self.default_reply
        return Reply(text=reply) if isinstance(reply, str) else reply

    # -- inspection --------------------------------------------------------------------------
    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def chat_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.method_name == "streamGenerateContent"]

    def utility_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.method_name == "generateContent"]

    def sleep(self, seconds: float) -> bool:
        """Wait up to ``seconds``; True when the server is being stopped."""
        return self._stopping.wait(seconds)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeGeminiAPI
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _read_request(self) -> RecordedRequest:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        text = raw.decode("utf-8", "replace")
        try:
            body: Any = json.loads(text) if text else None
        except ValueError:
            body = text
        parts = urlsplit(self.path)
        req = RecordedRequest(
            method=self.command,
            path=parts.path,
            query=parse_qs(parts.query),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        self.fake.record(req)
        return req

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _send_error(self, status: int, message: str) -> None:
        names = {
            400: "INVALID_ARGUMENT",
            401: "UNAUTHENTICATED",
            403: "PERMISSION_DENIED",
            404: "NOT_FOUND",
            429: "RESOURCE_EXHAUSTED",
            500: "INTERNAL",
            503: "UNAVAILABLE",
        }
        err = {"error": {"code": status, "message": message, "status": names.get(status, "UNKNOWN")}}
        self._send(status, json.dumps(err).encode())

    def do_GET(self) -> None:
        self._read_request()
        self._send_error(404, f"The fake Gemini API does not serve GET {self.path}.")

    def do_POST(self) -> None:
        req = self._read_request()
        method = req.method_name
        if method == "streamGenerateContent":
            self._chat(req)
        elif method == "generateContent":
            self._utility(req)
        elif method == "countTokens":
            self._send(200, json.dumps({"totalTokens": self.fake.count_tokens}).encode())
        else:
            self._send_error(404, f"The fake Gemini API does not serve {req.path}.")

    def _chat(self, req: RecordedRequest) -> None:
        reply = self.fake.next_reply(req)
        if reply.delay and self.fake.sleep(reply.delay):
            return
        if reply.status != 200:
            self._send_error(reply.status, reply.error_message)
            return
        model = req.model or "gemini-fake"
        if reply.raw is not None:
            raw = reply.raw.encode() if isinstance(reply.raw, str) else reply.raw
            self._send(200, raw, "text/event-stream")
            return
        chunks = [reply.text] if isinstance(reply.text, str) else list(reply.text) or [""]
        events = []
        for i, chunk in enumerate(chunks):
            cand: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": chunk}]}, "index": 0}
            event: dict[str, Any] = {"candidates": [cand], "modelVersion": model}
            if i == len(chunks) - 1:
                if reply.finish_reason:
                    cand["finishReason"] = reply.finish_reason
                event["usageMetadata"] = reply.usage()
            events.append(f"data: {json.dumps(event)}\r\n\r\n")
        self._send(200, "".join(events).encode(), "text/event-stream")

    def _utility(self, req: RecordedRequest) -> None:
        body = req.body if isinstance(req.body, dict) else {}
        config = body.get("generationConfig") or body.get("config") or {}
        if config.get("responseMimeType") == "application/json":
            schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
            text = json.dumps(_json_for_schema(schema))
        else:
            text = self.fake.utility_text
        answer = {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2, "totalTokenCount": 5},
            "modelVersion": req.model or "gemini-fake",
        }
        self._send(200, json.dumps(answer).encode())


# -- the code summariser's requests ---------------------------------------------------------------
# The delimiter lines of contextware.codeindex.gemini_summary, parsed independently of it on purpose.
_FILE_HEADER_RE = re.compile(r"^===== FILE (?P<nonce>[A-Za-z0-9]+): (?P<path>.+) \((?P<info>[^()\n]*)\) =====$", re.M)
_DEF_RE = re.compile(r"^(?P<indent>[ \t]*)(?:async[ \t]+)?(?P<kind>def|class)[ \t]+(?P<name>[A-Za-z_]\w*)", re.M)


def _unescape_at(text: str) -> str:
    return text.replace("\\@", "@")  # the summariser sends "@" as "\@" (the CLI expands @path)


@dataclass
class PromptFile:
    """One file found in a summariser request (``path`` and ``text`` with ``\\@`` turned back into ``@``)."""

    path: str
    language: str
    text: str
    truncated: bool = False


def parse_prompt_files(text: str) -> list[PromptFile]:
    """The files delimited in a summariser request.  Only headers with the nonce of the first one
    count, and each file runs to its own END line, so a file quoting delimiters cannot split itself."""
    files: list[PromptFile] = []
    nonce, pos = None, 0
    while (header := _FILE_HEADER_RE.search(text, pos)) is not None:
        pos = header.end()
        nonce = nonce or header["nonce"]
        if header["nonce"] != nonce:
            continue
        end_line = f"\n===== END FILE {nonce}: {header['path']} ====="
        end = text.find(end_line, header.end())
        if end < 0:
            break
        info = header["info"]
        files.append(
            PromptFile(
                path=_unescape_at(header["path"]),
                language=info.split(",")[0].strip(),
                text=_unescape_at(text[header.end() + 1 : end + 1]),
                truncated="truncated" in info,
            )
        )
        pos = end + len(end_line)
    return files


def fake_symbols(text: str) -> list[str]:
    """Names after ``def`` / ``class``; an indented def under a top-level class is ``Class.name``."""
    symbols: list[str] = []
    current_class = None
    for m in _DEF_RE.finditer(text):
        top = not m["indent"]
        if top:
            symbols.append(m["name"])
            current_class = m["name"] if m["kind"] == "class" else None
        elif current_class and m["kind"] == "def":
            symbols.append(f"{current_class}.{m['name']}")
    return list(dict.fromkeys(symbols))


def fake_summary(path: str, text: str) -> str:
    """``Summary of <path> by Gemini.`` plus the file's first non-empty line."""
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    summary = f"Summary of {path} by Gemini."
    return f"{summary} It starts with: {first[:120]}" if first else summary


@dataclass
class SummariesResponder:
    """Answers summariser requests like a well-behaved model; see :func:`summaries_responder`."""

    overrides: dict[str, Any] = field(default_factory=dict)
    reverse: bool = False
    wrap: str = "{}"
    other: Reply | str = "OK"
    batches: list[list[str]] = field(default_factory=list)  # the paths of each request, in order

    def __call__(self, request: RecordedRequest) -> Reply | str:
        files = parse_prompt_files("\n".join(request.texts()))
        if not files:
            return self.other
        self.batches.append([f.path for f in files])
        for f in files:  # a whole-reply override (a Reply or str) of any file in the batch wins
            if isinstance(self.overrides.get(f.path), (Reply, str)):
                return self.overrides[f.path]
        entries = []
        for f in files:
            if f.path in self.overrides and self.overrides[f.path] is None:
                continue  # dropped from the reply
            entry = {"path": f.path, "summary": fake_summary(f.path, f.text), "symbols": fake_symbols(f.text)}
            entry.update(self.overrides.get(f.path) or {})
            entries.append(entry)
        if self.reverse:
            entries.reverse()
        return self.wrap.replace("{}", json.dumps({"files": entries}, indent=1), 1)

    @property
    def paths(self) -> list[str]:
        """Every path summarised so far, over all requests."""
        return [p for batch in self.batches for p in batch]


def summaries_responder(
    overrides: Mapping[str, Any] | None = None, *, reverse: bool = False, wrap: str = "{}", other: Reply | str = "OK"
) -> SummariesResponder:
    """A chat handler that answers the code summariser (``contextware.codeindex.gemini_summary``) with valid
    JSON: for each delimited file ``{"path", "summary": "Summary of <path> by Gemini. It starts with:
    <first line>", "symbols": <names after def/class, methods as Class.name>}``.

    ``overrides`` maps a path to
      - ``None``: leave that path out of the reply (the summariser reports ``missing_result``);
      - a dict: fields merged into its entry, e.g. ``{"summary": ""}`` or ``{"symbols": "x"}``
        (``invalid_result``);
      - a :class:`Reply` or str: the answer to the WHOLE request whenever that path is in the batch,
        e.g. ``"not json"`` (``invalid_response``) or ``Reply(status=400)`` (exit 144, ``api_error``).
    ``reverse`` lists the entries in reverse order; ``wrap`` is a template whose ``{}`` receives the
    JSON (e.g. ``"Sure!\\n```json\\n{}\\n```"``); requests without file delimiters get ``other``.
    The responder records the paths of every request in ``.batches`` (``.paths`` flattens them).

    Use: ``fake_gemini_api.handler = responder = summaries_responder({"b.py": None})``.
    """
    return SummariesResponder(dict(overrides or {}), reverse, wrap, other)


__all__ = [
    "FakeGeminiAPI",
    "PromptFile",
    "RecordedRequest",
    "Reply",
    "SummariesResponder",
    "fake_summary",
    "fake_symbols",
    "parse_prompt_files",
    "summaries_responder",
]
