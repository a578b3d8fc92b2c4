"""HTML rendered on the server from plain strings: every value that comes from memory, a file or
the request goes through ``e`` (escaped, quotes included), so a stored ``<script>`` is shown as
text.  No inline script or style (the Content-Security-Policy would refuse them anyway)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from urllib.parse import urlencode

NAV = (
    ("/", "Dashboard"),
    ("/memories", "Memories"),
    ("/review", "Review"),
    ("/sessions", "Sessions"),
    ("/turns", "Turns"),
    ("/offloads", "Offloads"),
    ("/code", "Code"),
    ("/explain", "Why"),
)


def e(value: object) -> str:
    """Any value as escaped text (None is empty)."""
    return "" if value is None else escape(str(value), quote=True)


def url(route: str, /, **params: str | int | None) -> str:
    """A link with its query; empty parameters are left out.  Escape it with ``e`` in markup."""
    kept = {k: v for k, v in params.items() if v not in (None, "", False)}
    return route + (f"?{urlencode(kept)}" if kept else "")


def a(href: str, text: object, cls: str = "") -> str:
    attr = f' class="{e(cls)}"' if cls else ""
    return f'<a href="{e(href)}"{attr}>{e(text)}</a>'


def page(title: str, body: str, *, active: str = "", query: str = "") -> str:
    nav = "".join(a(href, name, "on" if href == active else "") for href, name in NAV)
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{e(title)} · Contextware</title>"
        '<link rel=stylesheet href="/static/ui.css"><script src="/static/ui.js" defer></script></head><body>'
        f"<header><strong>Contextware</strong><nav>{nav}</nav>"
        '<form class=search action="/memories" method=get role=search>'
        f'<input type=search name=q placeholder="Search memory" value="{e(query)}" aria-label="Search memory">'
        "<button>Search</button></form></header>"
        f"<main><h1>{e(title)}</h1>{body}</main></body></html>"
    )


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], cls: str = "") -> str:
    """Rows of already-rendered cells (escape their values first)."""
    head = "".join(f"<th>{e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{e(cls)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def dl(pairs: Iterable[tuple[str, object]]) -> str:
    """A definition list of (label, value); values are escaped here."""
    return "<dl>" + "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in pairs) + "</dl>"


def hidden(token: str, **fields: object) -> str:
    """The hidden inputs of a form: the run's token first."""
    items = {"token": token, **fields}
    return "".join(f'<input type=hidden name="{e(k)}" value="{e(v)}">' for k, v in items.items())


def select(name: str, options: Sequence[str], chosen: str | None, blank: str = "any") -> str:
    opts = [f'<option value="">{e(blank)}</option>'] + [
        f'<option value="{e(o)}"{" selected" if o == chosen else ""}>{e(o)}</option>' for o in options
    ]
    return f'<label>{e(name)} <select name="{e(name)}">{"".join(opts)}</select></label>'


def error_page(message: str, status: int) -> str:
    return page("Error" if status >= 500 else "Not possible", f"<p class=error role=alert>{e(message)}</p>")


def size(n: object) -> str:
    if not isinstance(n, int | float):
        return ""
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return ""
