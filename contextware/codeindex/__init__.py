"""Code index: one row per source file of the project, kept fresh.

Owns which files count (ignore rules, binaries, generated files: ``files``), the summarisers
(``local_summary`` with tree-sitter, ``gemini_summary`` through Gemini CLI, run in parallel with their
fallbacks by ``summarizing``), the index writer and crawl
(``indexer``), definition-level chunks (``chunks``: one row per function, method or class in
``code_chunks``, written with the file's row), ranking files for a question (``search``: file and
definition rankers fused), how code hits are shown (``hits``: freshness, exact content) and watch
mode (``watch``).

May import: ``storage`` and the shared helpers (errors, text, system, gemini).
"""
