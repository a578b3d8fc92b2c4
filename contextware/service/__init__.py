"""The resident service's client side: find, check, start, ask and stop the per-project service.

A resident service (``contextware.resident``) keeps one project's LanceDB connection and embedding
model warm and answers over a Unix domain socket.  This part is what every caller (the scripts and
the ``contextware`` command through ``cli``, the hook entry point in ``hosts``) uses to reach it:

- ``protocol``: the socket's private runtime folder, its checks, the versioned JSON framing;
- ``client``: ask the service (starting it on demand, detached) and say when to work in-process
  instead (``CONTEXTWARE_SERVICE=off``, nothing answers, a stale socket, a version mismatch, a
  service that died mid-request);
- ``spool``: finished turns queued in the data dir for the next writer, so a hook never waits;
- ``messages``: the shapes of the requests, answers and spool entries (``TypedDict``s).

The service is a transport: it runs the very same command handlers and hook handlers as the
in-process path.  Standard library only (plus ``errors``, ``system`` and ``storage.layout``, which
are too): the warm path of a hook or a script imports nothing heavy.  Ranked just above ``storage``
so that ``hosts`` and ``cli`` can use it.
"""
