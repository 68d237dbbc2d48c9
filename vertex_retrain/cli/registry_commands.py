"""Command-line handlers for `models`, `endpoints [stop|undeploy|rollback|history]` and `serve`.

Each handler takes the parsed arguments and returns the exit code. Listings print a table
(`--wide` shows every cell whole) or, with `--json`, the same records as JSON. Bad input,
an unknown model or endpoint name included, is one line on stderr with exit code 2; other
registry errors are one line with exit code 1.
"""

from __future__ import annotations

import argparse
import errno
import socket
import sys
from collections.abc import Callable
from typing import Any, TextIO

from vertex_retrain.backends.local.model_registry.registry_db import (
    RegistryError,
    RegistryInputError,
    RegistryNotFoundError,
)
from vertex_retrain.backends.local.serving.model_server import ServerStartError
from vertex_retrain.cli.console import Column, cell_text, print_json, printable, render_table
from vertex_retrain.invocation import command
from vertex_retrain.rules.traffic import TrafficSplitError, traffic_text

_EXPECTED_ERRORS = (
    RegistryError,
    RegistryInputError,
    RegistryNotFoundError,
    ServerStartError,
    TrafficSplitError,
)

METRICS_WIDTH = 40
"""The widest a version's metrics cell is in a table (``--wide`` lifts it)."""

MODEL_COLUMNS = (
    Column("model", "MODEL", 40),
    Column("versions", "VERSIONS"),
    Column("default_version", "DEFAULT"),
    Column("latest_version", "LATEST"),
    Column("aliases", "ALIASES", 30),
    Column("created", "CREATED"),
)
VERSION_COLUMNS = (
    Column("version", "VERSION"),
    # Whole: which version is the champion is what the table is read for.
    Column("aliases", "ALIASES"),
    Column("artifact_uri", "ARTIFACT", 40),
    Column("metrics", "METRICS", METRICS_WIDTH, digest=True),
    Column("pipeline_run", "RUN", 30),
    Column("created", "CREATED"),
)
ENDPOINT_COLUMNS = (
    Column("endpoint", "ENDPOINT", 30),
    Column("deployed_model", "DEPLOYED ID"),
    Column("model", "MODEL", 30),
    Column("version", "VERSION"),
    Column("traffic_percentage", "TRAFFIC %"),
    Column("server", "SERVER"),
    Column("state", "STATE"),
)
HISTORY_COLUMNS = (
    Column("seq", "#"),
    Column("action", "ACTION", 30),
    Column("split", "TRAFFIC (deployed model id=%)", 40),
    Column("rolled_back", "ROLLED BACK"),
    Column("created", "WHEN"),
)


class _InputError(ValueError):
    """Bad input found by a handler (exit 2)."""


def _database(args: argparse.Namespace) -> str | None:
    """The `--db` path, checked (:func:`vertex_retrain.cli.db_option.checked_db`).

    Raises:
        _InputError: A `--db` that is no registry, unless `--create` may make one there.
    """
    from vertex_retrain.cli.db_option import DbOptionError, checked_db

    try:
        return checked_db(getattr(args, "db", None), create=bool(getattr(args, "create", False)))
    except DbOptionError as error:
        raise _InputError(str(error)) from None


def _check_bind(host: str, port: int) -> None:
    """Refuses, before any model server starts, an address `serve` could not listen on."""
    from guarded_asgi.app import Limits
    from guarded_asgi.server import bind

    try:
        bind(host, port, Limits()).close()
    except OSError as error:
        raise _InputError(_bind_problem(host, port, error)) from None


def _bind_problem(host: str, port: int, error: OSError) -> str:
    if isinstance(error, socket.gaierror):
        return f"--host {host}: not an address or a name this machine can resolve ({error})"
    if error.errno == errno.EADDRINUSE:
        return (
            f"port {port} on {host} is in use (another server?); pass --port 0 for any free "
            "port, or another --port"
        )
    if error.errno == errno.EADDRNOTAVAIL:
        return (
            f"--host {host} is not an address of this machine; use 127.0.0.1 (the default) or "
            "one of this machine's own addresses"
        )
    if error.errno == errno.EACCES:
        return f"not allowed to listen on port {port} (below 1024?); pass a port >= 1024"
    return f"cannot listen on {host}:{port}: {error.strerror or error}"


def _guarded(action: Callable[[], None]) -> int:
    try:
        action()
    except (_InputError, RegistryNotFoundError) as error:
        # A name that does not exist is bad input: the user typed it (the message lists how
        # to find the right one).
        print(f"error: {error}", file=sys.stderr)
        return 2
    except _EXPECTED_ERRORS as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def _show(
    args: argparse.Namespace,
    columns: tuple[Column, ...],
    records: list[dict[str, Any]],
    out: TextIO,
) -> None:
    if getattr(args, "json", False):
        print_json(out, records)
    else:
        render_table(out, columns, records, wide=getattr(args, "wide", False))


def cli_models(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """`models [MODEL] [--json] [--wide]`: the model table, or one model's versions.

    Args:
        args: `model` (optional display name), `db` (optional database path), `json`, `wide`.
        out: Where the table or JSON goes (default: stdout).
    """
    from vertex_retrain.backends.local.model_registry.registry_tables import (
        model_records,
        version_records,
    )

    out = out or sys.stdout
    model = getattr(args, "model", None)

    def show() -> None:
        db = _database(args)
        if model:
            records = version_records(model, db)
            if not getattr(args, "json", False):  # --json keeps every metric as a mapping
                width = None if getattr(args, "wide", False) else METRICS_WIDTH
                records = [
                    {**r, "metrics": metrics_cell(r["metrics"], r["primary_metric"], width)}
                    for r in records
                ]
            _show(args, VERSION_COLUMNS, records, out)
        else:
            _show(args, MODEL_COLUMNS, model_records(db), out)

    return _guarded(show)


def metrics_cell(metrics: dict[str, Any], primary: str | None, width: int | None) -> str:
    """A version's metrics as one table cell: its own score on the primary metric first, then
    the champion's it was judged against, then the others by name and the decision's
    ``is_better`` flag last, as many whole as fit in ``width``, then how many more there are.

    A version registered by a run carries the decision's metrics (``candidate_<metric>``, its
    own; ``champion_<metric>``, ``reference_<name>_<metric>``, ...); one registered by hand
    may carry plain names: ``<metric>`` then counts as its own score.

    Args:
        metrics: The version's metrics.
        primary: The evaluation declaration's primary metric (None: not known).
        width: The cell's width (None: every metric).

    Returns:
        ``name=value, ...`` and ``+N more`` when some did not fit; ``-`` for none.
    """
    first = {} if primary is None else {primary: 0, f"candidate_{primary}": 0,
                                        f"champion_{primary}": 1}  # fmt: skip

    def rank(name: str) -> tuple[int, str]:
        return first.get(name, 3 if name == "is_better" else 2), name

    names = sorted(metrics, key=rank)
    parts = [f"{printable(name)}={cell_text(metrics[name])}" for name in names]
    whole = ", ".join(parts) or "-"
    if width is None or len(whole) <= width:
        return whole
    count = 1  # the primary metric, even when the table must cut it

    def cell(shown: int) -> str:
        return f"{', '.join(parts[:shown])}, +{len(parts) - shown} more"

    while count + 1 < len(parts) and len(cell(count + 1)) <= width:
        count += 1
    return cell(count)


def cli_endpoints(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """`endpoints [stop NAME|--all | undeploy NAME --model M | rollback NAME | history NAME]`.

    Args:
        args: `action` (None lists), `endpoint`, `all`, `model`, `db`, `json`, `wide`.
        out: Where the table, JSON or report goes (default: stdout).
    """
    out = out or sys.stdout
    action = getattr(args, "action", None)
    if action == "stop":
        return _guarded(lambda: _stop(args, _database(args), out))
    if action == "undeploy":
        return _guarded(lambda: _undeploy(args.endpoint, args.model, _database(args), out))
    if action == "rollback":
        return _guarded(lambda: _rollback(args.endpoint, _database(args), out))
    if action == "history":
        return _guarded(lambda: _history(args, _database(args), out))
    from vertex_retrain.backends.local.model_registry.registry_tables import endpoint_records

    return _guarded(lambda: _show(args, ENDPOINT_COLUMNS, endpoint_records(_database(args)), out))


def _stop(args: argparse.Namespace, db: str | None, out: TextIO) -> None:
    from vertex_retrain.backends.local.serving.endpoint_servers import stop_servers
    from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints

    if bool(args.endpoint) == bool(args.all):
        raise _InputError("endpoints stop: name one endpoint, or pass --all (not both)")
    names = (
        [endpoint.display_name for endpoint in LocalEndpoints(db).list_endpoints()]
        if args.all
        else [args.endpoint]
    )
    for name in names:
        stopped = stop_servers(name, db_path=db)
        print(
            f"endpoint {printable(name)}: {stopped} model server(s) stopped; deployments and "
            "traffic stay "
            f"(`{command('serve', name)}` serves it again)",
            file=out,
        )
    if not names:
        print("no local endpoints", file=out)


def _undeploy(endpoint: str, model: str, db: str | None, out: TextIO) -> None:
    from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints

    endpoints = LocalEndpoints(db)
    deployed = endpoints.get(endpoint).deployed_models
    if "@" in model:
        name, _, version = model.rpartition("@")
        matches = [
            d for d in deployed if d.model_display_name == name and d.model_version_id == version
        ]
    else:
        matches = [d for d in deployed if d.deployed_model_id == model]
    if not matches:
        known = ", ".join(
            f"{d.deployed_model_id} ({d.model_display_name}@{d.model_version_id})" for d in deployed
        )
        raise _InputError(
            f"endpoints undeploy: --model {model!r} is not deployed on {endpoint!r}; "
            f"deployed: {known or 'nothing'}"
        )
    gone = matches[0]
    after = endpoints.undeploy(endpoint, gone.deployed_model_id)
    versions = {d.deployed_model_id: d.model_version_id for d in after.deployed_models}
    split = traffic_text(after.traffic_split, versions)
    print(
        f"endpoint {endpoint}: undeployed {model} (deployed model id {gone.deployed_model_id}, "
        f"version {gone.model_version_id}); traffic now {split or 'none'}",
        file=out,
    )


def _rollback(endpoint: str, db: str | None, out: TextIO) -> None:
    """The split from before the endpoint's latest deployment, as `Backend.rollback` restores
    it on both backends: running it again changes nothing, and nothing is undeployed."""
    from vertex_retrain.backends.local.serving.deployment import rollback_locally
    from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints

    endpoints = LocalEndpoints(db)
    outcome = rollback_locally(endpoints, endpoint)
    versions = {
        d.deployed_model_id: d.model_version_id for d in endpoints.get(endpoint).deployed_models
    }
    now = traffic_text(outcome.traffic, versions)
    if outcome.previous_traffic == outcome.traffic:
        print(f"endpoint {printable(endpoint)}: traffic already {now}; nothing changed", file=out)
        return
    before = traffic_text(outcome.previous_traffic, versions) or "none"
    print(
        f"endpoint {printable(endpoint)}: rolled back to the split before its latest deployment: "
        f"traffic now {now} (was {before}); model aliases unchanged",
        file=out,
    )


def _history(args: argparse.Namespace, db: str | None, out: TextIO) -> None:
    from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints

    records = [
        {
            "seq": change.seq,
            "action": change.action,
            "split": change.split,
            "rolled_back": change.rolled_back,
            "created": change.created_at,
        }
        for change in LocalEndpoints(db).traffic_history(args.endpoint)
    ]
    _show(args, HISTORY_COLUMNS, records, out)


def cli_serve(args: argparse.Namespace) -> int:
    """`serve ENDPOINT [--host H] [--port P] [--seed S]`: serve until Ctrl-C or SIGTERM.

    The router starts the endpoint's model servers; when it stops, they stop too, so nothing
    of `serve` outlives it (deployments and traffic stay).

    Args:
        args: `endpoint`, and optional `host`, `port`, `seed`, `db`.
    """
    from vertex_retrain.backends.local.serving.endpoint_servers import stop_servers
    from vertex_retrain.backends.local.serving.router import serve_endpoint

    host = getattr(args, "host", None) or "127.0.0.1"
    port = getattr(args, "port", None) or 0

    def serve() -> None:
        db = _database(args)
        _check_bind(host, port)  # before any model server starts
        try:
            serve_endpoint(args.endpoint, host, port, db_path=db, seed=getattr(args, "seed", None))
        except OSError as error:
            if error.errno not in {errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES}:
                raise
            raise _InputError(_bind_problem(host, port, error)) from None  # taken meanwhile
        finally:
            try:
                stopped = stop_servers(args.endpoint, db_path=db)
            except RegistryNotFoundError:
                stopped = 0
            if stopped:
                print(f"stopped {stopped} model server(s) of {args.endpoint}", flush=True)

    from vertex_retrain.cli.processes import sigterm_as_interrupt

    # Until the router takes over SIGTERM, it interrupts like Ctrl-C, so the servers started
    # so far are stopped too.
    with sigterm_as_interrupt():
        return _guarded(serve)
