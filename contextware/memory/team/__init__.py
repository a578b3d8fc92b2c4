"""The team memory file: facts and episodes shared through git as ``.contextware/memory.jsonl``.

``memfile`` (the format: its lines, their checks and the merges, the git merge driver's core),
``share`` (export the file, and import it: the entry points), ``importing`` (the import itself,
checked whole then written in chunks) and ``tombstones`` (deletions that travel, and which
version of a memory wins). May import: ``memory.records``, ``memory.code_links``, ``storage``
and ``core``.
"""
