"""Offloads: research handed to headless Gemini, kept on disk and indexed.

Owns the sources of an offload (``sources``), its files on disk (``files``: the source of truth),
the cache of one-shot answers (``cache``), named and feature sessions (``sessions``, and
``session_admin`` for list/show/delete), summaries of answers (``summary``), the ``offloads`` table
(``table``), the table's sync with the files (``sync``) and the command itself (``run``).

May import: ``codeindex`` (which files count), ``storage`` and the shared helpers.
"""
