"""``python -m contextware <command>``: the ``contextware`` command, for installs that call the
package's own Python (hooks skip the command-line front end's imports, as ``scripts/hook.py`` does)."""

import sys

if sys.argv[1:2] == ["hook"]:
    from contextware.hosts.hooks.entry import main as hook_main

    del sys.argv[1]
    hook_main()
else:
    from contextware.cli import main

    main()
