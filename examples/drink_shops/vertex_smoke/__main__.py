"""``python -m vertex_smoke`` (see :mod:`vertex_smoke.main`)."""

import sys

from vertex_smoke.main import main

sys.exit(main())
