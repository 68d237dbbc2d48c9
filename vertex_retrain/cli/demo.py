"""``make demo``: small synthetic data, then two consecutive weeks of weekly-retraining locally.

Week 1 replays the newest week of the local sample data (generated on first use). Then the
reference generator appends the next week (``python -m trainer.data append``, a subprocess:
the library never imports ``trainer``) and week 2 runs on it, as the schedule's next Monday
would: fresh data through the data gate, the build reused from week 1's cache (same code),
the champion/challenger decision against week 1's champion, and the weeks on record.
Another ``make demo`` continues one week further.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.request
from typing import Any, TextIO

from vertex_retrain.cli.local_setup import (
    REPO_ROOT,
    LocalSetupError,
    ensure_sample_data,
    prepare_local_run,
)
from vertex_retrain.pipelines import defaults

# Two weeks must fit in about two minutes: one epoch of large batches is enough for the
# candidate to beat the baseline by far on the sample data (ndcg@10 about 0.62 against 0.25;
# "reorder your usual" gets about 0.62 too, so the demo does not require beating it).
DEMO_PARAMETERS: dict[str, Any] = {
    "source_uri": str(REPO_ROOT / "examples" / "drink_shops" / "trainer"),
    "epochs": 1,
    "batch_size": 2048,
    "learning_rate": 0.01,
}


def ensure_demo_data(out: TextIO) -> None:
    """Generates the demo transactions into the local bucket unless they are there already.

    Raises:
        LocalSetupError: The generator failed (its output is in the message).
    """
    ensure_sample_data(defaults.TRANSACTIONS_URI, out)


def sample_prediction(endpoint: str) -> tuple[str, dict[str, int], dict[str, Any]]:
    """Serves the endpoint on 127.0.0.1 briefly and sends it the sample instances.

    Returns:
        The URL, the traffic split the router applied, and the answer.
    """
    from vertex_retrain.backends.local.router import start_router

    with start_router(endpoint) as router:
        traffic = router.traffic_split()
        url = f"{router.url}/v1/endpoints/{endpoint}:predict"
        request = urllib.request.Request(
            url,
            data=json.dumps({"instances": defaults.SAMPLE_INSTANCES}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return url, traffic, json.loads(response.read())


def print_report(summary: dict[str, Any], out: TextIO) -> None:
    """The demo's closing summary: metrics, decision, registry, endpoint, cost."""
    from vertex_retrain.backends.local.registry import ModelRegistry
    from vertex_retrain.backends.local.registry_db import RegistryNotFoundError
    from vertex_retrain.specs.cost import format_money

    metrics = summary.get("metrics", {})
    decision = summary.get("decision", {})
    print("\n=== weekly-retraining: summary ===", file=out)
    for name in ("ndcg_at_10", "recall_at_10"):
        cells = [
            f"{who} {metrics[f'{who}_{name}']:.4f}"
            for who in ("candidate", "champion", "baseline")
            if f"{who}_{name}" in metrics
        ]
        print(f"{name}: " + ", ".join(cells), file=out)
    verdict = "NEW CHAMPION" if decision.get("is_better") else "challenger (traffic untouched)"
    print(f"decision: {verdict}: {decision.get('reason')}", file=out)
    try:
        versions = ModelRegistry().list_versions(defaults.MODEL_DISPLAY_NAME)
    except RegistryNotFoundError:
        versions = []
    for version in versions[-3:]:
        print(
            f"model {defaults.MODEL_DISPLAY_NAME} v{version.version_id}: "
            f"aliases {', '.join(version.aliases) or '-'}",
            file=out,
        )
    try:
        url, traffic, answer = sample_prediction(defaults.ENDPOINT_DISPLAY_NAME)
    except Exception as error:  # the report must not hide the run's result
        print(f"endpoint {defaults.ENDPOINT_DISPLAY_NAME}: no prediction ({error})", file=out)
    else:
        top = answer["predictions"][0]
        changed = "changed by this run" if summary.get("deployment") else "untouched by this run"
        shares = ", ".join(f"deployed model {k}: {v}%" for k, v in sorted(traffic.items()))
        print(f"endpoint {defaults.ENDPOINT_DISPLAY_NAME} ({changed}): {shares}", file=out)
        drinks = top.get("drinks") if isinstance(top, dict) else None
        if isinstance(drinks, list) and drinks:
            shown = ", ".join(
                f"{d.get('name', d.get('drink_id'))} ({d.get('score', 0):.2f})" for d in drinks[:3]
            )
            print(f"sample prediction via POST {url}:\n  top 3: {shown}", file=out)
        else:
            print(f"sample prediction via POST {url}:\n  {json.dumps(top)[:300]}", file=out)
    cost = summary.get("cost_on_vertex", {})
    if "unavailable" in cost:
        print(f"cost on Vertex: unavailable: {cost['unavailable']}", file=out)
    elif cost:
        currency = cost.get("currency", "")
        shape = cost["job_shape"]
        hardware = (
            f"{shape['accelerator_count']} x {shape['accelerator_type']} on "
            f"{shape['machine_type']}, {1 + int(shape['worker_count'])} replica(s)"
        )
        print(
            f"the same training on Vertex ({hardware}, {cost['assumed_training_hours']:g} h "
            f"assumed): on-demand {format_money(cost['on_demand'], currency)}, "
            f"Spot {format_money(cost['spot'], currency)}"
            + (f" in {cost['location']}" if cost.get("location") else "")
            + (f" ({'; '.join(cost['notes'])})" if cost.get("notes") else ""),
            file=out,
        )


def _stop_model_servers(out: TextIO) -> None:
    """Leaves nothing running: deployments and traffic stay, `serve` restarts the servers."""
    from vertex_retrain.cli.local_run import stop_endpoint_servers

    if stop_endpoint_servers(defaults.ENDPOINT_DISPLAY_NAME):
        print(
            "model servers stopped; `python compile.py serve "
            f"{defaults.ENDPOINT_DISPLAY_NAME}` serves the endpoint again",
            file=out,
        )


def cli_demo(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    """Runs the demo's two weeks; exit 0 when both succeeded, 2 on bad input."""
    from vertex_retrain.cli.compiling import compile_to_dict, default_arguments
    from vertex_retrain.cli.demo_weeks import (
        append_week,
        next_week,
        print_weeks,
        run_week,
        show_history,
    )
    from vertex_retrain.cli.local_run import local_arguments
    from vertex_retrain.cli.params import ParameterError, parameter_definitions, parse_overrides
    from vertex_retrain.cli.run_window import as_of_problem, with_local_as_of
    from vertex_retrain.pipelines.weekly_retraining import weekly_retraining

    spec = compile_to_dict(weekly_retraining)
    try:
        overrides = {**DEMO_PARAMETERS, **parse_overrides(args.param, parameter_definitions(spec))}
    except ParameterError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        arguments = prepare_local_run(local_arguments(default_arguments(spec), overrides), out)
    except LocalSetupError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    problem = as_of_problem(arguments, local=True)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    first = run_week(weekly_retraining, with_local_as_of(arguments, out), 1, out)
    weeks = [first]
    if first.outcome.succeeded:
        second_arguments = next_week(first.arguments)
        problem = as_of_problem(second_arguments, local=True)
        if problem:
            print(f"\nweek 2 skipped: {problem}", file=out)
        elif append_week(str(arguments["transactions_uri"]), out):
            weeks.append(run_week(weekly_retraining, second_arguments, 2, out))
    last = weeks[-1]
    if last.outcome.summary is not None:
        print_report(last.outcome.summary, out)
    print_weeks(weeks, out)
    show_history(defaults.MODEL_DISPLAY_NAME, out)
    _stop_model_servers(out)
    succeeded = all(week.outcome.succeeded for week in weeks)
    wall = sum(week.outcome.wall_seconds for week in weeks)
    state = "succeeded" if succeeded else "FAILED"
    logs = ", ".join(str(week.outcome.log_path) for week in weeks)
    print(f"\n{len(weeks)} week(s) {state} in {wall:.0f} s; full logs: {logs}", file=out)
    return 0 if succeeded and len(weeks) == 2 else 1
