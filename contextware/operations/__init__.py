"""Each behaviour declared once: its inputs (type, default, choices, bounds, help), the library
function that checks them and the one that runs it, how it may be routed and what it does to the
world.

The command line (``cli``), every MCP tool (``hosts.mcp.tools``) and the docs' rows (``docs``) are
built from these declarations, so adding an input to a behaviour touches its declaration and its
function only.  ``spec`` holds the vocabulary; one module per behaviour holds its declaration
(``save``, ``recall``, ``context``, ``index``, ``crawl``, ``store``, ``offload``, and ``memory`` for
the memory subcommands that are also tools); ``registry`` lists them all.
"""
