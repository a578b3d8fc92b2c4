"""Contextware: persistent, searchable local memory for coding agents.

The package is layered; each layer imports only the ones below it (``tests/unit/test_layers.py``
holds the order):

    resident                the resident service process: runs cli's and hosts' handlers on a warm project
    cli                     the command-line front end (scripts/ are thin entry points over it)
    hosts                   where agents plug in: hooks/, mcp/ (the MCP server), install/ (installers)
    memory                  facts, episodes, logs, recall, briefing, session store, maintenance
    offload                 research handed to Gemini: sources, files, cache, sessions, table
    codeindex               which files count, summaries, the index writer, watch
    service                 reaching the resident service: its standard-library client, the spool
    storage                 layout, config, Project, LanceDB, schemas, embeddings
    gemini                  the adapter to the Gemini CLI (headless turns, sessions, availability)
    fence, redact, text, system, settings, errors   shared helpers (standard library only)

``settings.Settings`` holds every environment variable the package reads; it is built once where a
process enters the package (``cli.run``, the hook entry, the MCP front, the resident service for each
request) and travels on ``Project`` or as a parameter.
"""

import os as _os

__version__ = "0.1.0"

# onnxruntime (under fastembed) runs Microsoft's 1DS telemetry client on Linux: loading a model writes
# ~/.cache/Microsoft/DeveloperTools/.onnxruntime/ and makes DNS lookups from native threads.  Only this
# variable, set before onnxruntime is imported, stops it; every process enters through this package.
_os.environ["ORT_DISABLE_TELEMETRY"] = "1"
# The other native libraries send nothing (docs/security.md, "What runs on this machine"); Hugging Face's
# hub client, used only when CONTEXTWARE_EMBED_MODEL names a fastembed model to download, is told the same.
_os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
