"""Contextware: persistent, searchable local memory for coding agents.

The package is layered; each layer imports only the ones below it (``tests/unit/test_layers.py``
holds the order):

    cli                     the command-line front end (scripts/ are thin entry points over it)
    hosts                   hooks, MCP server, installers: where agents plug in
    memory                  facts, episodes, logs, recall, briefing, session store, maintenance
    offload                 research handed to Gemini: sources, files, cache, sessions, table
    codeindex               which files count, summaries, the index writer, watch
    storage                 layout, config, Project, LanceDB, schemas, embeddings
    gemini, redact, text, system, errors   shared helpers (standard library only, but for gemini)
"""

__version__ = "0.1.0"
