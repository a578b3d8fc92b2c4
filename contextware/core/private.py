"""Private by default: what Contextware writes (the tables, offloads, logs, locks, the per-user
registry) is readable by its user alone.

``private_umask`` is called when a project is opened: from then on every file and folder the process
creates is 0600/0700 (the database library, the log appends and the service, which inherits it,
included).  The umask is per process, so what else the process writes afterwards (an export, an
install's settings files) is its user's alone too; git records no mode beyond the executable bit.
``tighten`` brings files made by an older version (0644 in 0755 folders) down to the same, for
``memory repair``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

PRIVATE_BITS = 0o077  # group and other: no access


def private_umask() -> None:
    """Add group/other to the process umask (keeps any stricter bits the user set)."""
    current = os.umask(PRIVATE_BITS)
    if current | PRIVATE_BITS != PRIVATE_BITS:
        os.umask(current | PRIVATE_BITS)


def tighten(root: Path) -> int:
    """Remove group/other access from ``root`` and everything under it (symlinks are not followed:
    their targets are not ours to change).  Returns how many files and folders were changed; a
    path that cannot be changed is left as it is."""
    changed = 0
    if not root.is_dir() or root.is_symlink():
        return 0
    paths = [str(root)]
    for here, dirs, files in os.walk(root):  # never into a symlinked folder
        paths += [os.path.join(here, n) for n in (*dirs, *files)]
    for name in paths:
        try:
            st = os.lstat(name)
            if stat.S_ISLNK(st.st_mode) or not st.st_mode & PRIVATE_BITS:
                continue
            os.chmod(name, stat.S_IMODE(st.st_mode) & ~PRIVATE_BITS)
            changed += 1
        except OSError:
            continue
    return changed
