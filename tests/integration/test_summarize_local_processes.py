"""The local summariser: symbols per language, summaries, fallbacks, caps and speed."""

from __future__ import annotations

import subprocess
import sys

PYTHON_SRC = '''\
#!/usr/bin/env python3
"""Invoice storage for the billing service.

Persists invoices in Postgres and sends reminders. Used by the nightly job. Nothing else.
"""
from __future__ import annotations

import dataclasses

MAX_RETRIES = 3
default_timeout = 30


@dataclasses.dataclass
class Invoice:
    """One customer invoice."""

    id: int
    total: float


class InvoiceStore:
    """Persists invoices in Postgres.

    Args:
        dsn: the connection string.
    """

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn

    async def save(self, invoice: Invoice) -> None:
        """Insert or update one invoice."""

    @property
    def size(self) -> int:
        return 0

    class Page:
        def next(self):
            return None


# Email a reminder for an overdue invoice.
def send_reminder(invoice: Invoice) -> bool:
    def _format() -> str:
        return ""

    return True


try:
    import ujson as json
except ImportError:
    JSON_FALLBACK = True
'''


PYTHON_SYMBOLS = [
    "MAX_RETRIES",
    "Invoice",
    "InvoiceStore",
    "InvoiceStore.__init__",
    "InvoiceStore.save",
    "InvoiceStore.size",
    "InvoiceStore.Page",
    "InvoiceStore.Page.next",
    "send_reminder",
    "JSON_FALLBACK",
]


JS_SRC = """\
/**
 * Client-side cart helpers.
 */
import { api } from "./api.js";

export const MAX_ITEMS = 50;
const cache = new Map();

/** Shopping cart kept in local storage. */
export class Cart {
  constructor(owner) { this.owner = owner; this.items = []; }
  add(item) { this.items.push(item); }
  get total() { return 0; }
  static fromJSON(json) { return new Cart(json.owner); }
  handleClick = () => {};
}

// Format a price in euros.
export function formatPrice(cents) {
  return `${cents / 100} EUR`;
}

export const debounce = (fn, ms) => fn;
"""


def test_import_is_light() -> None:
    code = (
        "import sys, contextware.codeindex.local_summary as m; "
        "print(any(name.startswith(('tree_sitter', 'json')) for name in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
