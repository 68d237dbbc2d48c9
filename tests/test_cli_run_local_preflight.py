"""``run --local`` checks the jobs the pipeline would submit before any step runs: an
impossible machine is refused at once, as Vertex would refuse it, not after the steps ahead
of training have run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.examples import DRINK_SHOPS
from vertex_retrain.cli.main import main

EXPERIMENT = f"{DRINK_SHOPS / 'pipelines.py'}:experiment"


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The local runs started (each stops at once with an error)."""
    from vertex_retrain.cli import local_run

    runs: list[Any] = []

    def start(*args: Any, **kwargs: Any) -> Any:
        runs.append(args)
        raise RuntimeError("stopped by the test")

    monkeypatch.setattr(local_run, "run_pipeline_locally", start)
    return runs


def test_run_local_refuses_an_impossible_job_before_any_step(
    root: Path, started: list[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["run", EXPERIMENT, "--local", "--param", "machine_type=n1-standard-4",
         "--param", "accelerator_type=NVIDIA_A100_80GB", "--param", "accelerator_count=1"]
    )  # fmt: skip
    err = capsys.readouterr().err.splitlines()
    assert code == 2
    assert err[0].startswith("run: error: task ")
    assert "NVIDIA_A100_80GB cannot run on n1-standard-4" in err[0]
    assert err[-1].startswith("run: refused by preflight (1 error(s)); no step ran.")
    assert len(err) == 2
    assert started == []


def test_run_local_preflight_lets_a_possible_job_through(
    root: Path, started: list[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    # The same GPU on a machine that takes it: the run goes on to start its steps.
    main(
        ["run", EXPERIMENT, "--local", "--param", "machine_type=a2-ultragpu-1g",
         "--param", "accelerator_type=NVIDIA_A100_80GB", "--param", "accelerator_count=1"]
    )  # fmt: skip
    assert len(started) == 1
    assert "refused by preflight" not in capsys.readouterr().err


WEEKLY = f"{DRINK_SHOPS / 'pipelines.py'}:weekly"
SOURCE = ["--param", f"source_uri={DRINK_SHOPS / 'trainer'}"]


def test_run_local_refuses_a_misspelt_evaluation_module_before_training(
    root: Path, started: list[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", WEEKLY, "--local", *SOURCE, "--param", "evaluation_module=trainer.evalute"])
    err = capsys.readouterr().err
    assert code == 2 and started == []
    (line,) = [x for x in err.splitlines() if "--param evaluation_module" in x]
    assert line.startswith("run: error: ") and "Valid alternatives: trainer.evaluate." in line


@pytest.mark.parametrize("training_code", ["python_package", "container"])
def test_run_local_says_nothing_of_a_module_that_is_there(
    root: Path, started: list[Any], capsys: pytest.CaptureFixture[str], training_code: str
) -> None:
    right = [
        "--param",
        "evaluation_module=trainer.evaluate",
        "--param",
        f"training_code={training_code}",
    ]
    main(["run", WEEKLY, "--local", *SOURCE, *right])
    assert "evaluation_module" not in capsys.readouterr().err
