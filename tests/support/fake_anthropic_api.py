"""A small fake of the Anthropic Messages API on 127.0.0.1, for running the REAL Claude Code offline.

Point the CLI at it with ``ANTHROPIC_BASE_URL=<api.base_url>`` and ``ANTHROPIC_API_KEY=...`` (see
``tests/support/claude_fixtures.py``).  It answers:

- ``POST /v1/messages`` — a turn (text, or a scripted tool call); streamed as server-sent events when
  the body asks ``"stream": true`` (``message_start``, ``content_block_start``, ``content_block_delta``
  with ``text_delta`` or ``input_json_delta``,
  ``content_block_stop``, ``message_delta`` with ``stop_reason`` and ``usage``, ``message_stop``),
  else one JSON message;
- ``POST /v1/messages/count_tokens`` — ``{"input_tokens": N}``;
- ``HEAD``/``GET`` anything else — 200 with an empty JSON object (connectivity checks).

Every request is recorded (``requests``) so tests can assert what the CLI sent; the server, the
recording and the reply queue are those of ``tests/support/fake_gemini_api.py``.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.fake_gemini_api import FakeGeminiAPI, RecordedRequest
from tests.support.fake_gemini_api import _Handler as _GeminiHandler


@dataclass
class Reply:
    """One scripted answer to a turn."""

    text: str = "OK"
    input_tokens: int = 10
    output_tokens: int = 5
    status: int = 200  # != 200: an HTTP error {"type": "error", "error": {...}} with this status
    error_message: str = "Scripted error from the fake Anthropic API."
    stop_reason: str = "end_turn"
    tool_use: dict | None = None  # {"name", "input"}: answer with this tool call instead of text


def message_texts(request: RecordedRequest, role: str | None = None) -> list[str]:
    """Every text of a request's ``messages`` (string contents and ``text`` blocks), optionally only
    those of one ``role`` (``user``, ``assistant`` or ``system``)."""
    body = request.body if isinstance(request.body, dict) else {}
    out: list[str] = []
    for message in body.get("messages") or []:
        if not isinstance(message, dict) or (role and message.get("role") != role):
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        out += [b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str)]
    return out


class FakeAnthropicAPI(FakeGeminiAPI):
    """Programmable fake; use as a context manager or call :meth:`start` / :meth:`stop`."""

    def __init__(self, default_reply: Reply | None = None) -> None:
        super().__init__()
        self.anthropic_default = default_reply or Reply()

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _Handler

    def next_anthropic_reply(self, request: RecordedRequest) -> Reply:
        if self.handler is not None:
            reply: Any = self.handler(request)
        else:
            with self._lock:
                reply = self.replies.popleft() if self.replies else self.anthropic_default
        return Reply(text=reply) if isinstance(reply, str) else reply

    def message_requests(self) -> list[RecordedRequest]:
        """The ``/v1/messages`` turns, in order."""
        with self._lock:
            return [r for r in self.requests if r.method == "POST" and r.path.rstrip("/").endswith("/v1/messages")]


class _Handler(_GeminiHandler):
    fake: FakeAnthropicAPI  # type: ignore[assignment]

    def do_HEAD(self) -> None:
        self._read_request()
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

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
        reply = self.fake.next_anthropic_reply(req)
        if reply.status != 200:
            self._error(reply.status, "invalid_request_error", reply.error_message)
            return
        body = req.body if isinstance(req.body, dict) else {}
        if reply.tool_use:
            block = {"type": "tool_use", "id": f"toolu_fake_{uuid.uuid4().hex[:12]}", **reply.tool_use}
            stop_reason = "tool_use"
        else:
            block, stop_reason = {"type": "text", "text": reply.text}, reply.stop_reason
        message = {
            "id": f"msg_fake_{uuid.uuid4().hex[:16]}",
            "type": "message",
            "role": "assistant",
            "model": str(body.get("model") or "claude-fake"),
            "content": [block],
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens},
        }
        if not body.get("stream"):
            self._send(200, json.dumps(message).encode())
            return
        start = {
            **message,
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": reply.input_tokens, "output_tokens": 1},
        }
        if block["type"] == "tool_use":
            first = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            first, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": reply.text}
        events = [
            {"type": "message_start", "message": start},
            {"type": "content_block_start", "index": 0, "content_block": first},
            {"type": "content_block_delta", "index": 0, "delta": delta},
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": reply.output_tokens},
            },
            {"type": "message_stop"},
        ]
        text = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
        self._send(200, text.encode(), "text/event-stream")
