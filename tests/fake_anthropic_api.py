"""A small fake of the Anthropic Messages API on 127.0.0.1, for running the REAL Claude Code offline.

Point the CLI at it with ``ANTHROPIC_BASE_URL=<api.base_url>`` and ``ANTHROPIC_API_KEY=...`` (see
``tests/claude_fixtures.py``).  It answers:

- ``POST /v1/messages`` — a turn; streamed as server-sent events when the body asks ``"stream": true``
  (``message_start``, ``content_block_start``, ``content_block_delta`` with ``text_delta``,
  ``content_block_stop``, ``message_delta`` with ``stop_reason`` and ``usage``, ``message_stop``),
  else one JSON message;
- ``POST /v1/messages/count_tokens`` — ``{"input_tokens": N}``;
- ``HEAD``/``GET`` anything else — 200 with an empty JSON object (connectivity checks).

Every request is recorded (:attr:`FakeAnthropicAPI.requests`) so tests can assert what the CLI sent.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Reply:
    """One scripted answer to a turn."""

    text: str = "OK"
    input_tokens: int = 10
    output_tokens: int = 5
    status: int = 200  # != 200: an HTTP error {"type": "error", "error": {...}} with this status
    error_message: str = "Scripted error from the fake Anthropic API."
    stop_reason: str = "end_turn"


@dataclass
class RecordedRequest:
    method: str
    path: str  # without the query string
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON, or the raw text when it is not JSON

    def message_texts(self, role: str | None = None) -> list[str]:
        """Every text of the request's ``messages`` (string contents and ``text`` blocks), optionally
        only those of one ``role`` (``user``, ``assistant`` or ``system``)."""
        body = self.body if isinstance(self.body, dict) else {}
        out: list[str] = []
        for message in body.get("messages") or []:
            if not isinstance(message, dict) or (role and message.get("role") != role):
                continue
            content = message.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
            for block in blocks:
                if isinstance(block, dict) and isinstance(block.get("text"), str):
                    out.append(block["text"])
        return out

    def system_text(self) -> str:
        """The top-level ``system`` prompt as one string."""
        system = self.body.get("system") if isinstance(self.body, dict) else None
        if isinstance(system, str):
            return system
        return "\n".join(b.get("text", "") for b in system or [] if isinstance(b, dict))

    def tool_names(self) -> list[str]:
        body = self.body if isinstance(self.body, dict) else {}
        return [t.get("name", "") for t in body.get("tools") or [] if isinstance(t, dict)]


ReplySource = Callable[[RecordedRequest], "Reply | str"]


class FakeAnthropicAPI:
    """Programmable fake; use as a context manager or call :meth:`start` / :meth:`stop`."""

    def __init__(self, default_reply: Reply | None = None) -> None:
        self.default_reply = default_reply or Reply()
        self.replies: deque[Reply | str] = deque()
        self.handler: ReplySource | None = None  # wins over the queue when set
        self.requests: list[RecordedRequest] = []
        self.count_tokens = 42
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> FakeAnthropicAPI:
        api = self

        class Handler(_Handler):
            fake = api

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-anthropic-api", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeAnthropicAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "fake API not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def push(self, *replies: Reply | str) -> None:
        """Queue replies for the next turns (a str is ``Reply(text=...)``)."""
        with self._lock:
            self.replies.extend(replies)

    def next_reply(self, request: RecordedRequest) -> Reply:
        if self.handler is not None:
            reply: Reply | str = self.handler(request)
        else:
            with self._lock:
                reply = self.replies.popleft() if self.replies else self.default_reply
        return Reply(text=reply) if isinstance(reply, str) else reply

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def message_requests(self) -> list[RecordedRequest]:
        """The ``/v1/messages`` turns, in order."""
        with self._lock:
            return [r for r in self.requests if r.method == "POST" and r.path.rstrip("/").endswith("/v1/messages")]


class _Handler(BaseHTTPRequestHandler):
    fake: FakeAnthropicAPI
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
        self.send_header("request-id", f"req_fake_{uuid.uuid4().hex[:12]}")
        self.end_headers()
        try:
            if self.command != "HEAD":
                self.wfile.write(body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_HEAD(self) -> None:
        self._read_request()
        self._send(200, b"{}")

    def do_GET(self) -> None:
        self._read_request()
        self._send(200, b"{}")

    def do_POST(self) -> None:
        req = self._read_request()
        path = req.path.rstrip("/")
        if path.endswith("/v1/messages/count_tokens"):
            self._send(200, json.dumps({"input_tokens": self.fake.count_tokens}).encode())
        elif path.endswith("/v1/messages"):
            self._message(req)
        else:
            self._error(404, "not_found_error", f"The fake Anthropic API does not serve {req.path}.")

    def _error(self, status: int, kind: str, message: str) -> None:
        self._send(status, json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode())

    def _message(self, req: RecordedRequest) -> None:
        reply = self.fake.next_reply(req)
        if reply.status != 200:
            self._error(reply.status, "invalid_request_error", reply.error_message)
            return
        body = req.body if isinstance(req.body, dict) else {}
        model = str(body.get("model") or "claude-fake")
        message_id = f"msg_fake_{uuid.uuid4().hex[:16]}"
        usage = {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens}
        if not body.get("stream"):
            message = {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": reply.text}],
                "stop_reason": reply.stop_reason,
                "stop_sequence": None,
                "usage": usage,
            }
            self._send(200, json.dumps(message).encode())
            return
        start = {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": reply.input_tokens, "output_tokens": 1},
        }
        events = [
            ("message_start", {"type": "message_start", "message": start}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": reply.text}},
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
                    "usage": {"output_tokens": reply.output_tokens},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        text = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
        self._send(200, text.encode(), "text/event-stream")
