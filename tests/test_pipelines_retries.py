"""Retries: every task that calls a Google API or runs a job has a retry policy with backoff in
the compiled IR; the local runner honours a task's retry policy with ``retries=True``
(``--retries``) and otherwise runs each task once."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest

from tests.data.pipelines.flaky import flaky, flaky_retried
from tests.examples import shipped_pipelines
from vertex_retrain.cli.compiling import compile_to_dict
from vertex_retrain.cli.local_run import run_pipeline_locally
from vertex_retrain.pipelines.retries import DEFAULT_RETRY, RETRIED_COMPONENTS

EXPECTED_POLICY = {
    "maxRetryCount": DEFAULT_RETRY.num_retries,
    "backoffDuration": DEFAULT_RETRY.backoff_duration,
    "backoffFactor": DEFAULT_RETRY.backoff_factor,
    "backoffMaxDuration": DEFAULT_RETRY.backoff_max_duration,
}


def _leaf_tasks(spec: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Task name -> (component name without ``comp-`` and kfp's ``-N`` suffix, task)."""
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for component in [spec["root"], *spec["components"].values()]:
        for name, task in component.get("dag", {}).get("tasks", {}).items():
            reference = task["componentRef"]["name"]
            if "dag" not in spec["components"][reference]:
                found[name] = (re.sub(r"-\d+$", "", reference.removeprefix("comp-")), task)
    return found


@pytest.mark.parametrize("name", sorted(shipped_pipelines()))
def test_retries_every_google_calling_task_has_the_policy(name: str) -> None:
    tasks = _leaf_tasks(compile_to_dict(shipped_pipelines()[name]))
    retried = {n: t.get("retryPolicy") for n, (c, t) in tasks.items() if c in RETRIED_COMPONENTS}
    assert {"train-custom-job", "evaluate-model", "prepare-dataset"} <= set(retried)
    assert retried == dict.fromkeys(retried, EXPECTED_POLICY)
    others = {n: t.get("retryPolicy") for n, (c, t) in tasks.items() if c not in retried}
    assert all(policy is None for policy in others.values()), others


def test_retries_policy_outlasts_a_hundred_second_outage_within_vertex_limits() -> None:
    def seconds(text: str) -> float:
        return float(text.removesuffix("s"))

    waits = [
        min(
            seconds(DEFAULT_RETRY.backoff_duration) * DEFAULT_RETRY.backoff_factor**attempt,
            seconds(DEFAULT_RETRY.backoff_max_duration),
        )
        for attempt in range(DEFAULT_RETRY.num_retries)
    ]
    assert sum(waits) > 100
    assert seconds(DEFAULT_RETRY.backoff_max_duration) <= 3600  # Vertex's largest backoff


def test_retries_outside_a_pipeline_body_is_refused() -> None:
    from vertex_retrain.pipelines.retries import retry_google_calls

    with pytest.raises(RuntimeError, match=r"@dsl\.pipeline function's body"):
        retry_google_calls()


@pytest.mark.parametrize(("pipeline", "succeeds"), [(flaky_retried, True), (flaky, False)])
def test_retries_local_runner_with_retries_honours_the_policy(
    root: Path, tmp_path: Path, pipeline: Any, succeeds: bool
) -> None:
    tally = tmp_path / "tally.txt"
    console = io.StringIO()
    outcome = run_pipeline_locally(pipeline, {"tally": str(tally)}, console=console, retries=True)
    assert outcome.succeeded is succeeds, console.getvalue()[-2000:]
    assert tally.read_text(encoding="utf-8").split() == ["attempt"] * (2 if succeeds else 1)


def test_retries_local_runner_runs_a_task_once_by_default_and_says_what_vertex_would_do(
    root: Path, tmp_path: Path
) -> None:
    tally = tmp_path / "tally.txt"
    console = io.StringIO()
    outcome = run_pipeline_locally(flaky_retried, {"tally": str(tally)}, console=console)
    assert not outcome.succeeded
    assert tally.read_text(encoding="utf-8").split() == ["attempt"]
    log = outcome.log_path.read_text(encoding="utf-8")
    assert "is not retried here; on Vertex its retry policy runs it up to 1 more time(s)" in log


def test_retries_flag_reaches_the_local_run_and_is_refused_for_vertex(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from vertex_retrain.cli import local_run
    from vertex_retrain.cli.main import main

    seen: list[bool] = []

    def start(*args: Any, retries: bool = False, **kwargs: Any) -> Any:
        seen.append(retries)
        raise RuntimeError("stopped by the test")

    monkeypatch.setattr(local_run, "run_pipeline_locally", start)
    reference = "tests/data/pipelines/flaky.py:flaky_retried"
    for flags in (["--local"], ["--local", "--retries"]):
        main(["run", reference, *flags, "--param", "tally=/tmp/unused"])
    assert seen == [False, True]
    capsys.readouterr()
    code = main(["run", reference, "--retries", "--project", "p", "--location", "us-central1"])
    assert code == 2
    assert "--retries applies to --local runs" in capsys.readouterr().err
