"""Arguments of the commands on the local registry: ``models``, ``endpoints``, ``serve``.

Standard library only, like :mod:`vertex_retrain.cli.main`, so ``--help`` stays cheap.
"""

from __future__ import annotations

import argparse
import os


def add_listing_options(parser: argparse.ArgumentParser, *, nested: bool = False) -> None:
    """``--json`` and ``--wide`` of a listing command."""
    # A nested action's copies have no default, so they never overwrite the parent's value.
    default = argparse.SUPPRESS if nested else False
    parser.add_argument(
        "--json", action="store_true", default=default, help="print the records as JSON"
    )
    parser.add_argument(
        "--wide", action="store_true", default=default, help="show every column whole"
    )


def add_db_option(parser: argparse.ArgumentParser, *, create: bool = True) -> None:
    """``--db PATH`` (the local registry database) and, for commands that may make it,
    ``--create``."""
    parser.add_argument(
        "--db",
        default=argparse.SUPPRESS,
        metavar="PATH",
        help=(
            "registry database (default $VERTEX_LOCAL_ROOT/registry.db, made when missing); "
            "another path must hold a registry already" + (", unless --create" if create else "")
        ),
    )
    if not create:
        return
    parser.add_argument(
        "--create",
        action="store_true",
        default=argparse.SUPPRESS,
        help="make a new, empty registry at --db when there is none",
    )


def port_number(text: str) -> int:
    """``--port``: an integer from 0 (any free port) to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0 to 65535)") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number: use 0 (any) to 65535")
    return port


def local_root_problem(value: str | None) -> str | None:
    """Why ``VERTEX_LOCAL_ROOT=value`` cannot be the local root, or None.

    The root is a folder, made when missing; a file there, or a file in its way, would
    fail every command that writes under it.
    """
    if not value:
        return None
    path = os.path.abspath(os.path.expanduser(value))
    while not os.path.lexists(path):
        path = os.path.dirname(path)
    if os.path.isdir(path):
        return None
    what = "is a file" if path == os.path.abspath(value) else f"has a file in its way ({path})"
    return (
        f"VERTEX_LOCAL_ROOT={value} {what}, not a folder; point it at a folder (it is made when "
        "missing), e.g. export VERTEX_LOCAL_ROOT=$PWD/.local-vertex"
    )


def add_local_inspection(subparsers: argparse._SubParsersAction) -> None:
    """``models``, ``endpoints [stop|undeploy|rollback|history]`` and ``serve``."""
    models = subparsers.add_parser(
        "models", help="list the local model registry (or one model's versions and aliases)"
    )
    models.add_argument("model", nargs="?", metavar="MODEL", help="a model's display name")
    add_listing_options(models)
    endpoints = subparsers.add_parser(
        "endpoints",
        help=(
            "list the local endpoints; stop their servers, undeploy, roll back, show traffic "
            "history"
        ),
        description=(
            "Without an action, list the local endpoints, their deployed models, traffic and "
            "server state. `stop` stops model servers (deployments stay; `serve` starts them "
            "again), `undeploy` removes a deployed model, `rollback` restores the traffic "
            "split from before the latest deployment, `history` shows traffic changes."
        ),
    )
    add_listing_options(endpoints)
    actions = endpoints.add_subparsers(dest="action", metavar="ACTION")
    stop = actions.add_parser("stop", help="stop the model servers of NAME, or of every endpoint")
    stop.add_argument("endpoint", nargs="?", metavar="NAME", help="endpoint display name")
    stop.add_argument("--all", action="store_true", help="every local endpoint")
    undeploy = actions.add_parser("undeploy", help="remove a deployed model from endpoint NAME")
    undeploy.add_argument("endpoint", metavar="NAME", help="endpoint display name")
    undeploy.add_argument(
        "--model",
        required=True,
        metavar="ID_OR_MODEL@VERSION",
        help="the deployed model: its id (see `endpoints`) or MODEL@VERSION",
    )
    rollback = actions.add_parser(
        "rollback",
        help="restore endpoint NAME's traffic split from before its latest deployment",
        description=(
            "Restore the traffic split from before the endpoint's latest deployment (the split "
            "a run summary's Rollback line names). Running it again changes nothing. Only "
            "traffic moves: nothing is undeployed and no alias moves, so the champion stays "
            "the newer version for the next run's gate (move it back with the local registry's "
            "ModelRegistry.set_alias)."
        ),
    )
    rollback.add_argument("endpoint", metavar="NAME", help="endpoint display name")
    history = actions.add_parser("history", help="traffic changes of endpoint NAME")
    history.add_argument("endpoint", metavar="NAME", help="endpoint display name")
    add_listing_options(history, nested=True)
    serve = subparsers.add_parser(
        "serve",
        help="serve a local endpoint on 127.0.0.1 until Ctrl-C (its traffic split applies)",
        description=(
            "Start the endpoint's model servers and a router; Ctrl-C or SIGTERM stops all of "
            "them (deployments and traffic stay)."
        ),
    )
    serve.add_argument("endpoint", metavar="ENDPOINT", help="endpoint display name")
    serve.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    serve.add_argument(
        "--port", type=port_number, default=8080, help="port (default 8080; 0: any free port)"
    )
    serve.add_argument("--seed", type=int, help="seed of the traffic draw (reproducible splits)")
    for parser in (models, endpoints, stop, undeploy, rollback, history, serve):
        add_db_option(parser)
