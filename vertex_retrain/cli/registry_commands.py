"""Command-line handlers for `models`, `endpoints` and `serve ENDPOINT` (wired in compile.py).

Each handler takes the parsed arguments and returns the exit code; registry errors are
printed as one clear line on stderr with exit code 1 instead of a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from vertex_retrain.backends.local.model_server import ServerStartError
from vertex_retrain.backends.local.registry_db import (
    RegistryError,
    RegistryInputError,
    RegistryNotFoundError,
)
from vertex_retrain.rules.traffic import TrafficSplitError

_EXPECTED_ERRORS = (
    RegistryError,
    RegistryInputError,
    RegistryNotFoundError,
    ServerStartError,
    TrafficSplitError,
)


def _guarded(action: Callable[[], None]) -> int:
    try:
        action()
    except _EXPECTED_ERRORS as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def cli_models(args: argparse.Namespace) -> int:
    """`models [MODEL]`: the model table, or one model's versions.

    Args:
        args: `model` (optional display name) and `db` (optional database path).
    """
    from vertex_retrain.backends.local.registry_tables import models_table, versions_table

    model = getattr(args, "model", None)
    db = getattr(args, "db", None)
    return _guarded(lambda: print(versions_table(model, db) if model else models_table(db)))


def cli_endpoints(args: argparse.Namespace) -> int:
    """`endpoints`: one line per deployed model with traffic and server state.

    Args:
        args: `db` (optional database path).
    """
    from vertex_retrain.backends.local.registry_tables import endpoints_table

    return _guarded(lambda: print(endpoints_table(getattr(args, "db", None))))


def cli_serve(args: argparse.Namespace) -> int:
    """`serve ENDPOINT [--host H] [--port P] [--seed S]`: run the router until Ctrl-C.

    Args:
        args: `endpoint`, and optional `host`, `port`, `seed`, `db`.
    """
    from vertex_retrain.backends.local.router import serve_endpoint

    return _guarded(
        lambda: serve_endpoint(
            args.endpoint,
            getattr(args, "host", None) or "127.0.0.1",
            getattr(args, "port", None) or 0,
            db_path=getattr(args, "db", None),
            seed=getattr(args, "seed", None),
        )
    )
