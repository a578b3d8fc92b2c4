"""The shared helpers every domain stands on, standard library only, in their own order:
``errors`` (the one error tree), ``json_types`` (the shape of a JSON value), ``settings`` (every environment variable, read once per entry
point), ``system`` (processes, atomic writes, paths), ``text`` and ``words`` (tokens, dates,
shortening; the one word splitter and stemmer), ``redact`` (the one redaction layer for secrets),
``private`` (file modes), ``inputs`` (the bounded reader of files a user names) and ``fence`` (how
recalled memory is shown to a model or a terminal).
"""
