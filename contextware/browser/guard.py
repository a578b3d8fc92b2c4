"""Who may talk to the browser: the person who started it.  Every request must carry the run's
token (in the URL once, then in an HttpOnly SameSite=Strict cookie; in the form body for a POST),
name this server in its ``Host`` header, and come from no other origin.  Anything else is refused
with 403 before a page runs.  Tokens are compared in constant time and never logged.

The cookie is bound to this server by its path.  Cookies are not isolated by port: one set for
``127.0.0.1`` with ``Path=/`` is sent to every server on that address the user opens, another
user's dev server included.  So every page of a run lives under a secret prefix derived from the
token (``/cw-<16 hex>``, ``run_prefix``), the cookie says ``Path=<prefix>``, and the browser sends it
to no URL outside it; no other server's page links there.  The guard strips the prefix from each
request and adds it to the links and redirects of each answer, so the pages keep their plain paths.

Every answer carries the security headers: a strict Content-Security-Policy (only this server's own
CSS and script; no inline code, no frames), ``nosniff``, no referrer, no caching."""

from __future__ import annotations

import hmac
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

SECURITY_HEADERS = [
    (b"content-security-policy", b"default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]
TOKEN_FIELD = "token"  # the query parameter and the form field that carry it


_LINK = re.compile(rb'((?:href|action|src)=")/(?![/\\])')


def run_prefix(token: str) -> str:
    """The secret path every page of this run lives under: no other server is sent the cookie."""
    return "/cw-" + hmac.new(token.encode(), b"contextware-path", "sha256").hexdigest()[:16]


def local_location(path: str, query: str = "") -> str:
    """A redirect target that stays on this server: the path with its leading slashes and
    backslashes folded into one (``//evil.example/`` would be a protocol-relative URL to another
    host, an open redirect)."""
    return "/" + quote(path.lstrip("/\\")) + (f"?{query}" if query else "")


def same(given: str | None, token: str) -> bool:
    """Constant-time comparison (no early exit on the first different character)."""
    return given is not None and hmac.compare_digest(given.encode("utf-8", "replace"), token.encode())


def cookie_name(port: int) -> str:
    """One cookie per server: cookies ignore ports, two browsers of two projects must not clash."""
    return f"contextware_{port}"


def cookie_value(header: bytes, name: str) -> str | None:
    for part in header.decode("latin-1").split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


class Guard:
    """ASGI middleware in front of the pages: the checks above, then the security headers."""

    def __init__(self, app: App, token: str, port: int) -> None:
        self.app = app
        self.token = token
        self.port = port
        self.prefix = run_prefix(token)
        self.hosts = {f"127.0.0.1:{port}".encode(), f"localhost:{port}".encode()}
        self.origins = {f"http://{h.decode()}".encode() for h in self.hosts}
        self.cookie = cookie_name(port)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            return  # no websockets here
        headers: dict[bytes, bytes] = {}
        for key, value in scope["headers"]:
            headers.setdefault(key.lower(), value)
        why = self.refusal(scope, headers)
        if why is not None:
            await self.refuse(send, why)
            return
        scope = {k: v for k, v in scope.items() if k != "raw_path"}
        scope["path"] = scope["path"][len(self.prefix) :] or "/"
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))
        if scope["method"] == "GET" and TOKEN_FIELD in query:  # first visit: the token moves to a cookie
            rest = urlencode([(k, v) for k, v in query.items() if k != TOKEN_FIELD])
            await self.redirect(send, self.prefix + local_location(scope["path"], rest))
            return
        held: list[Message] = []

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*self._prefixed(message.get("headers", [])), *SECURITY_HEADERS]
                if any(k.lower() == b"content-type" and v.startswith(b"text/html") for k, v in message["headers"]):
                    held.append(message)  # its body's links get the prefix, then its length is known
                    return
            elif message["type"] == "http.response.body" and held:
                held.append(message)
                if message.get("more_body"):
                    return
                body = _LINK.sub(rb"\1" + self.prefix.encode() + b"/", b"".join(m.get("body", b"") for m in held[1:]))
                start = held[0]
                start["headers"] = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
                start["headers"].append((b"content-length", str(len(body)).encode()))
                held.clear()
                await send(start)
                await send({"type": "http.response.body", "body": body})
                return
            await send(message)

        await self.app(scope, receive, secured)

    def _prefixed(self, headers: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
        """A page's redirect (``/memory/x``) leads under this run's prefix, and only to this server."""
        out = []
        for key, value in headers:
            if key.lower() == b"location" and value.startswith(b"/"):
                path, _, query = value.decode("latin-1").partition("?")
                value = (self.prefix + local_location(path, query)).encode("latin-1")
            out.append((key, value))
        return out

    def refusal(self, scope: Scope, headers: dict[bytes, bytes]) -> str | None:
        """Why a request is refused, or None to let it through."""
        if headers.get(b"host") not in self.hosts:
            return "This server answers only requests addressed to 127.0.0.1 or localhost at its own port."
        origin = headers.get(b"origin")
        site = headers.get(b"sec-fetch-site")
        # A browser's own form posts say "Origin: null" under Referrer-Policy no-referrer; they
        # also say Sec-Fetch-Site same-origin, which no page can forge.
        null_ok = origin == b"null" and site == b"same-origin"
        if origin is not None and origin not in self.origins and not null_ok:
            return "Requests from another origin are refused."
        if site is not None and site not in (b"same-origin", b"none"):
            return "Requests from another site are refused."
        if scope["method"] not in ("GET", "HEAD", "POST"):
            return "Only GET and POST are answered."
        path = scope["path"]
        if not (path == self.prefix or path.startswith(self.prefix + "/")):
            return "This address is not one of this server's pages: open the URL `contextware ui` printed."
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))
        given = query.get(TOKEN_FIELD) if scope["method"] == "GET" and TOKEN_FIELD in query else None
        if given is None:
            given = cookie_value(headers.get(b"cookie", b""), self.cookie)
        if not same(given, self.token):
            return "A valid token is required: open the URL `contextware ui` printed."
        return None

    async def refuse(self, send: Send, why: str) -> None:
        body = f"403 Forbidden: {why}\n".encode()
        headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 403, "headers": headers + SECURITY_HEADERS})
        await send({"type": "http.response.body", "body": body})

    async def redirect(self, send: Send, location: str) -> None:
        cookie = f"{self.cookie}={self.token}; HttpOnly; SameSite=Strict; Path={self.prefix}"
        headers = [
            (b"location", location.encode("latin-1", "replace")),
            (b"set-cookie", cookie.encode()),
            (b"content-length", b"0"),
        ]
        await send({"type": "http.response.start", "status": 303, "headers": headers + SECURITY_HEADERS})
        await send({"type": "http.response.body", "body": b""})


def form_token_ok(form: Mapping[str, str], token: str) -> bool:
    """A POST's form must carry the token too (a cookie alone is what a forged request would have)."""
    value = form.get(TOKEN_FIELD)
    return isinstance(value, str) and same(value, token)
