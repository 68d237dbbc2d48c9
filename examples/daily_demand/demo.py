"""The daily demand team's weekly pipeline, locally: ``python examples/daily_demand/demo.py``.

Sample sales are generated into the team's local bucket once (``demand_forecast.data
generate``; ``$VERTEX_LOCAL_ROOT/gcs/daily-demand-ml/data``, default ``./.local-vertex``).
Week 1 runs the Monday after the newest day; then seven days of sales are appended, as the
nightly feed would, and week 2 runs the next Monday, so its candidate is judged against week
1's champion. Run it again and it goes on from the newest day. After each week: the decision,
the RMSE of the candidate, the champion and the seasonal naive reference, and a forecast
served over HTTP through the local endpoint. At the end the endpoint stays deployed and its
model servers are stopped (``vertex-retrain serve daily-demand`` serves it again). Everything
here is the library as any team uses it: the configured pipeline (``pipelines.py``), the
local runner and the local endpoint router.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import sys
import urllib.request
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

HERE = Path(__file__).resolve().parent


def load_pipelines() -> ModuleType:
    """The team's configured pipelines (``pipelines.py`` beside this file)."""
    spec = importlib.util.spec_from_file_location("daily_demand_pipelines", HERE / "pipelines.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {HERE / 'pipelines.py'}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def ensure_data(uri: str, out: TextIO) -> None:
    """Generates the sample sales at ``uri`` unless a generation is already there."""
    from demand_forecast.data import GENERATION_FILE, generate
    from demand_forecast.paths import sample_path
    from demand_forecast.synthetic import WorldConfig

    if (sample_path(uri) / GENERATION_FILE).is_file():
        return
    done = generate(uri, WorldConfig(), days=56)
    print(f"sample sales generated at {uri}: {done['first_day']} .. {done['last_day']}", file=out)


def run_week(pipeline: Any, overrides: dict[str, Any], console: TextIO) -> Any:
    """Runs the configured pipeline locally with its defaults and ``overrides``.

    The package is built from this clone's ``demand_forecast/`` unless ``source_uri`` is
    overridden (a team would upload it to its bucket).
    """
    from vertex_retrain.cli.compiling import compile_to_dict, default_arguments
    from vertex_retrain.cli.local_run import local_arguments, run_pipeline_locally

    arguments = local_arguments(
        default_arguments(compile_to_dict(pipeline)),
        {"source_uri": str(HERE / "demand_forecast"), **overrides},
    )
    return run_pipeline_locally(pipeline, arguments, console=console)


def forecast(endpoint: str, instances: list[Any]) -> tuple[dict[str, int], list[Any]]:
    """Serves the endpoint on 127.0.0.1 briefly and sends it ``instances``.

    Returns:
        The endpoint's traffic split and the predictions.
    """
    from vertex_retrain.backends.local.serving.router import start_router

    with start_router(endpoint) as router:
        request = urllib.request.Request(
            f"{router.url}/v1/endpoints/{endpoint}:predict",
            data=json.dumps({"instances": instances}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return router.traffic_split(), json.loads(response.read())["predictions"]


def report(team: ModuleType, outcome: Any, out: TextIO) -> None:
    """The week's decision, its metrics, a served forecast and, when the week's deployment
    replaced a split, the command that restores it."""
    from vertex_retrain.steps.summary_registration import local_rollback_text

    summary = outcome.summary or {}
    decision, metrics = summary.get("decision", {}), summary.get("metrics", {})
    rmse = {
        name: metrics.get(key)
        for name, key in (
            ("candidate", "candidate_rmse"),
            ("champion", "champion_rmse"),
            ("seasonal naive", "reference_seasonal_naive_rmse"),
        )
    }
    shown = ", ".join(f"{k} {v:.3f}" for k, v in rmse.items() if isinstance(v, float))
    print(f"rmse (units per store, item and day): {shown}", file=out)
    verdict = "NEW CHAMPION" if decision.get("is_better") else "challenger"
    print(f"decision: {verdict}: {decision.get('reason')}", file=out)
    traffic, predictions = forecast(team.MODEL, team.SAMPLE_INSTANCES)
    print(
        f"forecast for {json.dumps(team.SAMPLE_INSTANCES[0])}: {predictions[0]['units']:.2f} "
        f"units (traffic {traffic})",
        file=out,
    )
    rollback = local_rollback_text(summary.get("deployment") or {}, team.MODEL)
    if rollback:
        print(f"roll back: {rollback}", file=out)


def run_weeks(team: ModuleType, weeks: int, overrides: dict[str, Any], out: TextIO) -> list[Any]:
    """Runs ``weeks`` consecutive Mondays, appending a week of sales before each after the first.

    Returns:
        Each week's outcome; the list ends early at a run that failed.
    """
    from demand_forecast.data import append

    outcomes: list[Any] = []
    as_of = ""  # week 1: the local runner replays the newest day of the data
    for week in range(1, weeks + 1):
        if outcomes:
            done = append(team.DATA_URI, days=7)
            print(f"\nnew sales: {done['first_day']} .. {done['last_day']}", file=out)
            as_of = (dt.date.fromisoformat(as_of) + dt.timedelta(days=7)).isoformat()
        print(f"\n=== week {week} ===", file=out)
        outcome = run_week(team.weekly, {**overrides, "as_of": as_of}, out)
        outcomes.append(outcome)
        if not outcome.succeeded:
            break
        as_of = outcome.summary["data_window"]["as_of"]
        report(team, outcome, out)
    return outcomes


def run_demo(team: ModuleType, overrides: dict[str, Any], out: TextIO) -> list[Any]:
    """The demo: sample data if there is none, two weeks, then the model servers stopped.

    Returns:
        Each week's outcome.
    """
    from vertex_retrain.cli.local_run import stop_endpoint_servers

    ensure_data(team.DATA_URI, out)
    try:
        return run_weeks(team, 2, overrides, out)
    finally:  # the endpoint stays deployed; its model servers do not outlive the demo
        if stop_endpoint_servers(team.MODEL):
            print(
                f"\nmodel servers stopped; `vertex-retrain serve {team.MODEL}` serves again",
                file=out,
            )


def main(argv: list[str] | None = None) -> int:
    """Two weeks with the team's defaults; returns 1 when a run fails."""
    argparse.ArgumentParser(
        prog="python examples/daily_demand/demo.py", description=__doc__
    ).parse_args(argv)
    outcomes = run_demo(load_pipelines(), {}, sys.stdout)
    return 0 if len(outcomes) == 2 and all(o.succeeded for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
