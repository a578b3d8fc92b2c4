"""The memory browser (``contextware ui``): one project's memory as local web pages.

``server`` starts it on 127.0.0.1 at a free port with a per-run token; ``guard`` refuses every
request without the token or from a foreign Host or Origin and sets the security headers; ``pages``
answers the routes by calling the same functions as the CLI and MCP (``memory.records``,
``memory.recall``, ``memory.maintenance``, ``memory.history``) and ``views`` the read models only the
browser needs (dashboard figures, the code map, review queues, session timelines, offloads);
``bodies`` renders the larger pages from those values and ``html`` the layout and small parts,
escaping every stored text (memory is data, never markup).  ``static/`` holds the CSS and script it serves.

May import memory, codeindex, storage, service and the shared helpers; the CLI imports it."""
