"""Memory: what the agent saves and asks for.

Owns facts, episodes and logs (save, supersede, get, list: ``records``; update, confirm, delete:
``edits``; a fact's chain: ``history``), recall across every collection and its fusion (``recall/``), the session briefing
(``briefing``), the memories tied to code (``code_links``), maintenance (stats, compact, repair:
``maintenance``; ``cleanup``: what older versions stored and repair cleans; ``remember``: a user turn's "remember …" lines found as facts), and two rooms:
``team/`` (the team memory file shared through git) and ``turns/`` (captured conversation turns
over time: digests, retention, the archive, the prompt hook's record of what it injected).

Recall and the briefing read every table, code index and offloads included, so this package sits
above ``codeindex``, ``offload`` and ``store``. May import: ``store``, ``offload``, ``codeindex``,
``storage`` and ``core``. Never ``hosts`` or ``cli``.
"""
