"""Memory: what the agent saves and asks for.

Owns facts, episodes and logs (save, update, supersede, delete: ``records``), recall across every
collection and its fusion (``recall``), the session briefing (``briefing``), the namespaced
key-value session store (``kvstore``) and maintenance (stats, compact, repair: ``maintenance``);
the team memory file (``memfile``: its format and merges, ``exchange``: export and import,
``tombstones``: deletions that travel); captured conversation folded with use (``digest``: a
session's digest episode, ``gemini_digest``: one by Gemini under a daily token budget,
``retention``: old sessions' turns folded into their digests, ``archive``: where those turns go,
``remember``: a user turn's "remember …" lines found as facts);
the prompt hook's bounded record of what it injected and held back (``decisions``).

Recall and the briefing read every table, code index and offloads included, so this package sits
above ``codeindex`` and ``offload``. May import: ``offload``, ``codeindex``, ``storage`` and the
shared helpers. Never ``hosts`` or ``cli``.
"""
