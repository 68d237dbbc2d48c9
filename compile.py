"""Command line of the vertex-retrain library; the logic lives in :mod:`vertex_retrain.cli`.

Kept as a file at the repository root so that ``python compile.py ...`` works from a clone;
the installed console script ``vertex-retrain`` runs the same :func:`main`.
"""

import sys

from vertex_retrain.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
