"""``compile.py models | endpoints | serve ENDPOINT``: the local registry and endpoints."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO


def cli_models(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    """Prints every local model with its versions and aliases."""
    from components.local.registry import ModelRegistry
    from components.local.registry_db import RegistryError
    from components.local.registry_tables import models_table, versions_table

    try:
        print(models_table(), file=out)
        for model in ModelRegistry().list_models():
            print(f"\n{model.display_name}:", file=out)
            print(versions_table(model.display_name), file=out)
    except RegistryError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def cli_endpoints(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    """Prints every local endpoint with its deployed models and traffic split."""
    from components.local.registry_db import RegistryError
    from components.local.registry_tables import endpoints_table

    try:
        print(endpoints_table(), file=out)
    except RegistryError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def cli_serve(args: argparse.Namespace) -> int:
    """Serves a local endpoint until Ctrl-C (restarting its model servers if needed)."""
    from components.local.registry_db import RegistryError, RegistryNotFoundError
    from components.local.router import serve_endpoint

    try:
        serve_endpoint(args.endpoint, host=args.host, port=args.port)
    except (RegistryError, RegistryNotFoundError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0
