"""Each behaviour declared once: its inputs (type, default, choices, bounds, help), the library
function that checks them and the one that runs it, and how it may be routed.

The command line (``cli``), the MCP tools (``hosts.mcp``) and the docs are built from these
declarations, so adding an input to a behaviour touches its declaration and its function only
(``spec`` holds the vocabulary; one module per behaviour holds its declaration).
"""
