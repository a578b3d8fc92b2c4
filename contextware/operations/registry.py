"""Every declared behaviour, by command name: what the doors, the docs and their tests iterate."""

from __future__ import annotations

from contextware.operations.context import CONTEXT
from contextware.operations.crawl import CRAWL
from contextware.operations.index import INDEX
from contextware.operations.memory import MEMORY_OPERATIONS
from contextware.operations.offload import OFFLOAD
from contextware.operations.recall import RECALL
from contextware.operations.save import SAVE
from contextware.operations.spec import Operation
from contextware.operations.store import STORE

OPERATIONS: dict[str, Operation] = {
    op.name: op for op in (SAVE, RECALL, INDEX, CRAWL, STORE, OFFLOAD, CONTEXT, *MEMORY_OPERATIONS)
}
