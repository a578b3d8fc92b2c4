"""Exercise one native dependency the way Contextware uses it, for a watcher outside the process.

``python tests/support/native_audit.py CASE [--raw]`` runs in a project folder (the working
directory) with a fresh HOME; the caller wraps it in ``strace -f`` and looks at every connect() and
every file created.  ``--raw`` leaves ``contextware`` unimported, so the library runs with its own
defaults (the audit in docs/security.md); without it the package is imported first, as in every one
of our processes, so the opt-outs it sets apply.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

CASES: dict[str, Callable[[Path], None]] = {}
REPO = Path(__file__).resolve().parents[2]
RAW = "--raw" in sys.argv[2:]
OPT_OUTS = ("ORT_DISABLE_TELEMETRY", "HF_HUB_DISABLE_TELEMETRY")


def package() -> None:
    """Make ``contextware`` importable; in a raw run, undo the opt-outs its import sets."""
    import os

    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    import contextware  # noqa: F401

    if RAW:
        for name in OPT_OUTS:
            os.environ.pop(name, None)


def case(fn: Callable[[Path], None]) -> Callable[[Path], None]:
    CASES[fn.__name__] = fn
    return fn


@case
def pyarrow(root: Path) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pa.table({"id": [f"r{i}" for i in range(1000)], "n": list(range(1000))})
    pq.write_table(table, root / "t.parquet")
    back = pq.read_table(root / "t.parquet")
    assert pc.sum(back["n"]).as_py() == 499500


@case
def lancedb(root: Path) -> None:
    import lancedb as ldb
    import pyarrow as pa

    db = ldb.connect(str(root / "db"))
    rows = [{"id": f"r{i}", "text": f"row number {i} about deploys", "vector": [float(i % 7)] * 8} for i in range(300)]
    table = db.create_table("t", pa.Table.from_pylist(rows))
    table.create_fts_index("text", replace=True)
    table.search([1.0] * 8).limit(3).to_list()
    table.search("deploys", query_type="fts").limit(3).to_list()
    table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(rows[:10])
    table.optimize()


@case
def tokenizers(root: Path) -> None:
    from tokenizers import Tokenizer

    package()
    from contextware.storage.embeddings import bundled_model_files

    tok = Tokenizer.from_file(str(bundled_model_files()[1]))
    tok.enable_padding()
    assert tok.encode_batch(["where are the data models?", "deploy"])[0].ids


@case
def onnxruntime(root: Path) -> None:
    package()
    from contextware.storage.embeddings import BundledEmbedder

    assert BundledEmbedder().embed(["where are the data models?"]).shape == (1, 384)


@case
def tree_sitter(root: Path) -> None:
    package()
    from tree_sitter_language_pack import get_parser

    from contextware.codeindex.languages import GRAMMARS
    from contextware.codeindex.local_summary import summarize_local

    for grammar in sorted(GRAMMARS):  # every grammar the code index loads
        get_parser(grammar).parse(b"x = 1\n")  # type: ignore[arg-type]
    for name, text in {"a.py": "def load(path):\n    return path\n", "b.ts": "export function f(): void {}\n"}.items():
        summarize_local(name, text)


@case
def mcp_sdk(root: Path) -> None:
    package()
    from contextware.hosts.mcp.server import build_server

    build_server()


@case
def starlette_uvicorn(root: Path) -> None:
    import threading
    import time
    import urllib.request

    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    app = Starlette(routes=[Route("/", lambda request: PlainTextResponse("ok"))])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as resp:
        assert resp.read() == b"ok"
    server.should_exit = True
    thread.join(5)


@case
def detect_secrets(root: Path) -> None:
    package()
    from contextware.core.redact import redact

    assert redact("api_key = 'Zx9Qw2Lm8Rt5Yp3Vb7Nc'")[1]


def main() -> None:
    name = sys.argv[1]
    if not RAW:
        package()  # the opt-outs every process of ours sets

    CASES[name](Path.cwd())
    print("done", name)


if __name__ == "__main__":
    main()
