"""``make demo``: the drink shops' weekly pipeline, locally, for two consecutive weeks.

Small synthetic data is generated into the chain's local bucket (``trainer.data generate``,
once) and kept in the chain's warehouse: ``warehouse.duckdb`` beside it, DuckDB standing in for
BigQuery (``warehouse.py``). Each week's run reads its window from there (``extract-window``,
the same declaration a Vertex run queries BigQuery with). Week 1 replays the newest week of
it; then the generator appends the next week (``trainer.data append``), the warehouse is
loaded again, and week 2 runs on it, as next Monday's scheduled run would: fresh
data through the data gate, the build reused from week 1's cache (same code), the
champion/challenger decision against week 1's champion, and the weeks on record. Another
``make demo`` continues one week further: it appends the next week and runs that one only (a
week already run with success is not run again).

    python examples/drink_shops/demo.py [--param NAME=VALUE ...]

Everything here uses the library as another team would: the configured pipeline
(``pipelines.py``), the local runner, the registry and ``vertex-retrain history``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import io
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

HERE = Path(__file__).resolve().parent

SAMPLE_SCALE: dict[str, int] = {"members": 10000, "stores": 50, "weeks": 26, "seed": 7}
"""Small enough for a few minutes on two cores (the seeds' full scale is 500,000 members,
2,000 shops, 156 weeks); the world drifts as its defaults say."""

# Two weeks must fit in about two minutes: one epoch of large batches is enough for the
# candidate to beat popularity by far on the sample data (ndcg@10 about 0.62 against 0.25).
DEMO_PARAMETERS: dict[str, Any] = {
    # The source as it is in this clone (a team would upload it to its bucket).
    "source_uri": str(HERE / "trainer"),
    "training_args": ["--epochs", "1", "--batch_size", "2048"],
    "hyperparameters": {"learning_rate": 0.01, "embedding_dim": 32},
}


def _load(name: str) -> ModuleType:
    """The example's module ``name`` (a file beside this one), loaded by path."""
    spec = importlib.util.spec_from_file_location(f"drink_shops_{name}", HERE / f"{name}.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {HERE / f'{name}.py'}")
    module = importlib.util.module_from_spec(spec)
    # Registered first: dataclasses and pickling look their module up by name.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def load_pipelines() -> ModuleType:
    """The example's configured pipelines (``pipelines.py`` beside this file)."""
    return _load("pipelines")


def load_warehouse(uri: str, out: TextIO) -> None:
    """(Re)writes the warehouse, ``warehouse.duckdb`` beside the data, from its Parquet files."""
    from trainer.paths import resolve

    database = _load("warehouse").load_duckdb(resolve(uri))
    print(f"warehouse: {database} (drink_shops.transactions, .drinks, .stores)", file=out)


def _generator(command: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trainer.data", command, *flags],
        capture_output=True,
        text=True,
        check=False,
    )


def ensure_data(uri: str, out: TextIO, *, scale: Mapping[str, int] = SAMPLE_SCALE) -> bool:
    """Generates the sample transactions at ``uri`` (the local bucket) unless they are there.

    Returns:
        False (with the generator's error on ``out``) when generating failed.
    """
    from trainer.paths import resolve

    if (resolve(uri) / "generation.json").is_file():
        if not (resolve(uri) / "warehouse.duckdb").is_file():
            load_warehouse(uri, out)
        return True
    done = _generator("generate", *(f"--{k}={v}" for k, v in scale.items()), f"--out={uri}")
    if done.returncode != 0:
        print(f"error: generating the sample data failed: {done.stderr.strip()}", file=out)
        return False
    print(f"sample data generated at {uri} ({resolve(uri)}): {done.stdout.strip()}", file=out)
    load_warehouse(uri, out)
    return True


def append_week(uri: str, out: TextIO) -> bool:
    """Appends the next week to the local data with the generator's command line.

    Returns:
        False (with a line saying why) when the generator could not append to it.
    """
    done = _generator("append", f"--out={uri}")
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        print(
            f"\nthe next week is skipped: trainer.data append failed: "
            f"{detail[-1] if detail else '?'}",
            file=out,
        )
        return False
    print(f"\nnew data: {done.stdout.strip()}", file=out)
    load_warehouse(uri, out)
    return True


@dataclass(frozen=True)
class DemoWeek:
    """One week of the demo: its number, arguments, outcome and the tasks served from cache."""

    number: int
    arguments: dict[str, Any]
    outcome: Any
    cached: dict[str, str] = field(default_factory=dict)


def run_week(pipeline: Any, arguments: Mapping[str, Any], number: int, out: TextIO) -> DemoWeek:
    """Runs the pipeline for the week ending at ``arguments["as_of"]``."""
    from vertex_retrain.cli.local_run import cached_tasks, run_pipeline_locally
    from vertex_retrain.cli.task_names import pipeline_display_names

    print(f"\n=== week {number}: transactions before {arguments.get('as_of')} ===", file=out)
    outcome = run_pipeline_locally(pipeline, arguments, console=out)
    names = pipeline_display_names(pipeline)  # the steps as the progress lines named them
    cached = {names.get(task, task): run for task, run in cached_tasks(outcome.run_dir).items()}
    return DemoWeek(number, dict(arguments), outcome, cached)


def weeks_on_record(model: str) -> set[str]:
    """The ``as_of`` of each run of ``model`` that succeeded under this local root."""
    from vertex_retrain.backends.local.model_registry.registry_db import RegistryNotFoundError
    from vertex_retrain.backends.local.model_registry.weeks_on_record import RunHistory

    try:
        records = RunHistory().weeks(model)
    except RegistryNotFoundError:
        return set()
    return {record.as_of for record in records if record.state == "SUCCEEDED" and record.as_of}


def next_week(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments of the following week: ``as_of`` seven days later."""
    as_of = dt.date.fromisoformat(str(arguments["as_of"]))
    return {**arguments, "as_of": (as_of + dt.timedelta(days=7)).isoformat()}


def sample_prediction(endpoint: str, instances: list[Any]) -> tuple[str, dict[str, int], Any]:
    """Serves the endpoint on 127.0.0.1 briefly and sends it the sample instances."""
    from vertex_retrain.backends.local.serving.router import start_router

    with start_router(endpoint) as router:
        url = f"{router.url}/v1/endpoints/{endpoint}:predict"
        request = urllib.request.Request(
            url,
            data=json.dumps({"instances": instances}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return url, router.traffic_split(), json.loads(response.read())


def served_versions(endpoint: str) -> dict[str, str]:
    """Deployed model id -> the model version it serves, on the local ``endpoint``."""
    from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints

    deployed = LocalEndpoints().get(endpoint).deployed_models
    return {model.deployed_model_id: model.model_version_id for model in deployed}


def print_report(summary: Mapping[str, Any], chain: ModuleType, out: TextIO) -> None:
    """The closing summary: metrics, decision, registry, a prediction, cost."""
    from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
    from vertex_retrain.backends.local.model_registry.registry_db import RegistryNotFoundError
    from vertex_retrain.cli.run_report import metrics_line
    from vertex_retrain.rules.traffic import traffic_text
    from vertex_retrain.specs.cost import format_money
    from vertex_retrain.steps.summary_registration import local_rollback_text

    decision = summary.get("decision", {})
    print("\n=== drink-shops-weekly: summary ===", file=out)
    print(metrics_line(summary.get("metrics", {}), decision), file=out)
    verdict = "NEW CHAMPION" if decision.get("is_better") else "challenger (traffic untouched)"
    print(f"decision: {verdict}: {decision.get('reason')}", file=out)
    try:
        versions = ModelRegistry().list_versions(chain.MODEL)
    except RegistryNotFoundError:
        versions = []
    for version in versions[-3:]:
        aliases = ", ".join(version.aliases) or "-"
        print(f"model {chain.MODEL} version {version.version_id}: aliases {aliases}", file=out)
    try:
        url, traffic, answer = sample_prediction(chain.MODEL, chain.SAMPLE_INSTANCES)
    except Exception as error:  # the report must not hide the run's result
        print(f"endpoint {chain.MODEL}: no prediction ({error})", file=out)
    else:
        changed = "changed by this run" if summary.get("deployment") else "untouched by this run"
        served = served_versions(chain.MODEL)
        print(f"endpoint {chain.MODEL} ({changed}): {traffic_text(traffic, served)}", file=out)
        rollback = local_rollback_text(summary.get("deployment") or {}, chain.MODEL, served)
        if rollback:
            print(f"roll back: {rollback}", file=out)
        top = answer["predictions"][0]
        drinks = top.get("drinks") if isinstance(top, dict) else None
        shown = (
            ", ".join(
                f"{d.get('name', d.get('drink_id'))} ({d.get('score', 0):.2f})" for d in drinks[:3]
            )
            if isinstance(drinks, list) and drinks
            else json.dumps(top)[:300]
        )
        print(f"sample prediction via POST {url}:\n  top 3: {shown}", file=out)
    cost = summary.get("cost_on_vertex", {})
    if cost and "unavailable" not in cost:
        currency, shape = cost.get("currency", ""), cost["job_shape"]
        print(
            f"the same training on Vertex ({shape['accelerator_count']} x "
            f"{shape['accelerator_type']} on {shape['machine_type']}, "
            f"{cost['assumed_training_hours']:g} h assumed): on-demand "
            f"{format_money(cost['on_demand'], currency)}, Spot "
            f"{format_money(cost['spot'], currency)}"
            + (f" in {cost['location']}" if cost.get("location") else ""),
            file=out,
        )


def period_span(periods: object) -> str:
    """``2023-01-02..2023-06-12`` for a list of period starts; one start alone; ``-`` for none."""
    if not isinstance(periods, list) or not periods:
        return "-"
    first, last = str(periods[0]), str(periods[-1])
    return first if first == last else f"{first}..{last}"


def print_weeks(weeks: Sequence[DemoWeek], out: TextIO) -> None:
    """One block per week: window, data, gate, cache reuse, decision."""
    print("\n=== the weeks ===", file=out)
    for week in weeks:
        summary = week.outcome.summary or {}
        window, gate = summary.get("data_window", {}), summary.get("data_gate", {})
        state = "succeeded" if week.outcome.succeeded else "FAILED"
        print(f"week {week.number} (as_of {week.arguments.get('as_of')}): {state}", file=out)
        if window:
            print(
                f"  data: {window.get('first_row')} .. {window.get('last_row')}; train weeks "
                f"{period_span(window.get('train_periods'))}, selection "
                f"{period_span(window.get('selection_periods'))}, gate "
                f"{period_span(window.get('gate_periods'))} ({window.get('gate_rows')} rows); "
                f"content {str(window.get('content_hash', ''))[:12]}",
                file=out,
            )
        warehouse = summary.get("warehouse") or {}
        if warehouse:
            print(
                f"  warehouse: {warehouse.get('rows')} rows extracted by DuckDB, window "
                f"{str(warehouse.get('digest', '')).removeprefix('sha256:')[:12]}",
                file=out,
            )
        if gate:
            stats = gate.get("statistics", {})
            shown = ", ".join(
                f"{label} {stats[name]:g}"
                for name, label in (
                    ("rows", "rows"),
                    ("row_ratio", "x last week"),
                    ("distinct_member_id", "members"),
                    ("groups", "shops"),
                    ("distinct_drink_id", "drinks"),
                    ("max_mix_shift", "largest mix shift"),
                )
                if isinstance(stats.get(name), int | float)
            )
            print(f"  gate: {gate.get('verdict')}\n  gate statistics: {shown or '-'}", file=out)
        print(f"  cached from an earlier run: {', '.join(sorted(week.cached)) or 'none'}", file=out)
        decision = summary.get("decision")
        if decision:
            verdict = "new champion" if decision.get("is_better") else "challenger"
            print(f"  decision: {verdict}: {decision.get('reason')}", file=out)
        elif summary.get("error"):
            print(f"  error: {summary['error']}", file=out)


def first_week_line(newest: Mapping[str, Any], done: set[str], chosen: str) -> str:
    """What the demo says before its first run: the week it runs first.

    Args:
        newest: The arguments with the newest week of the data as ``as_of``.
        done: The weeks on record as succeeded.
        chosen: The local runner's line saying how ``as_of`` was chosen ("" when given).

    Returns:
        ``chosen`` when the newest week runs; when it ran already, that the week after it
        runs (once appended), never the newest week's announcement.
    """
    as_of = str(newest.get("as_of"))
    if as_of not in done:
        return chosen
    following = next_week(newest)["as_of"]
    return (
        f"the week before {as_of} (the newest of the data) ran already: the demo appends the "
        f"next week and runs as_of={following}"
    )


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    """Runs the two weeks; 0 when both succeeded, 1 otherwise, 2 on bad input."""
    from vertex_retrain.cli.compiling import compile_to_dict, default_arguments
    from vertex_retrain.cli.local_run import local_arguments, stop_endpoint_servers
    from vertex_retrain.cli.main import main as vertex_retrain
    from vertex_retrain.cli.params import ParameterError, parameter_definitions, parse_overrides
    from vertex_retrain.cli.run_window import as_of_problem, with_local_as_of

    parser = argparse.ArgumentParser(prog="demo.py", description=__doc__.split("\n")[0])
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args(argv)
    chain = load_pipelines()
    spec = compile_to_dict(chain.weekly)
    try:
        overrides = {
            **DEMO_PARAMETERS,
            # The warehouse's declaration: the window comes from warehouse.duckdb.
            "dataset_declaration": _load("warehouse").WAREHOUSE_DECLARATION,
            **parse_overrides(args.param, parameter_definitions(spec)),
        }
    except ParameterError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    arguments = local_arguments(default_arguments(spec), overrides)
    if not ensure_data(str(arguments["data_uri"]), out):
        return 1
    problem = as_of_problem(arguments, local=True)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    chosen = io.StringIO()  # which week the data's newest is: said once the demo knows
    newest = with_local_as_of(arguments, chosen)
    done = weeks_on_record(chain.MODEL)
    line = first_week_line(newest, done, chosen.getvalue().strip())
    if line:
        print(line, file=out)
    weeks: list[DemoWeek] = []
    if newest.get("as_of") not in done:
        weeks.append(run_week(chain.weekly, newest, len(done) + 1, out))
        done.add(str(newest.get("as_of")))
    if not weeks or weeks[0].outcome.succeeded:
        following = next_week(newest)
        problem = as_of_problem(following, local=True)
        if problem:
            print(f"\nthe next week is skipped: {problem}", file=out)
        elif append_week(str(arguments["data_uri"]), out):
            weeks.append(run_week(chain.weekly, following, len(done) + 1, out))
    if not weeks:
        return 1
    if weeks[-1].outcome.summary is not None:
        print_report(weeks[-1].outcome.summary, chain, out)
    print_weeks(weeks, out)
    print(f"\n=== vertex-retrain history {chain.MODEL} ===", file=out, flush=True)
    vertex_retrain(["history", chain.MODEL])
    if stop_endpoint_servers(chain.MODEL):
        print(f"model servers stopped; `vertex-retrain serve {chain.MODEL}` serves again", file=out)
    succeeded = all(week.outcome.succeeded for week in weeks)
    wall = sum(week.outcome.wall_seconds for week in weeks)
    logs = ", ".join(str(week.outcome.log_path) for week in weeks)
    state = "succeeded" if succeeded else "FAILED"
    print(f"\n{len(weeks)} week(s) {state} in {wall:.0f} s; full logs: {logs}", file=out)
    return 0 if succeeded and weeks[-1].arguments.get("as_of") != newest.get("as_of") else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
