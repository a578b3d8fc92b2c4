"""The resident service itself (``python -m contextware.resident``): one process per data dir that
holds the open database and the loaded model and runs, for each request, the same
``contextware.cli.run`` and ``contextware.hosts.hooks.run_hook`` as an in-process call would.

It sits above ``cli`` and ``hosts`` because it runs their handlers; nothing imports it (callers
reach it through the socket, via ``contextware.service``).
"""
