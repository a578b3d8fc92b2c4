"""Storage: where a project's memory lives and how its tables are read and written.

Owns project root / data dir / database URI resolution (``layout``), ``config.json`` (``config``),
the ``Project`` handle (``project``), the LanceDB connection, file locks and retries (``database``),
a table's vector and BM25 searches (``table_search``, from in-memory snapshots in the resident
service), table schemas (``schemas``), what each table embeds and indexes for full text (``embedded_text``),
the embedding model (``embeddings``) and the fast LanceDB import (``lancedb_import``).

May import: the shared helpers at the top of the package (errors, text, system). Nothing above it.
"""
