"""``python -m contextware.resident DATA_DIR``: started detached by ``contextware.service.client``."""

import sys

from contextware.resident.server import main

raise SystemExit(main(sys.argv[1:]))
