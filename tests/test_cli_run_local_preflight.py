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
HERE = ["--param", f"source_uri={DRINK_SHOPS / 'trainer'}", "--param", f"data_uri={DRINK_SHOPS}"]
"""Folders on this machine for the code and data the first steps read (checked before any)."""


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
        ["run", EXPERIMENT, "--local", *HERE, "--param", "machine_type=n1-standard-4",
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
        ["run", EXPERIMENT, "--local", *HERE, "--param", "machine_type=a2-ultragpu-1g",
         "--param", "accelerator_type=NVIDIA_A100_80GB", "--param", "accelerator_count=1"]
    )  # fmt: skip
    assert len(started) == 1
    assert "refused by preflight" not in capsys.readouterr().err


WEEKLY = f"{DRINK_SHOPS / 'pipelines.py'}:weekly"


def test_run_local_refuses_a_misspelt_evaluation_module_before_training(
    root: Path, started: list[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", WEEKLY, "--local", *HERE, "--param", "evaluation_module=trainer.evalute"])
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
    main(["run", WEEKLY, "--local", *HERE, *right])
    assert "evaluation_module" not in capsys.readouterr().err


def test_run_local_warns_of_a_module_the_source_lacks_and_goes_on(
    root: Path, started: list[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    # 'traner' may be a dependency's package: said, not refused.
    main(["run", WEEKLY, "--local", *HERE, "--param", "training_module=traner.task"])
    (line,) = [x for x in capsys.readouterr().err.splitlines() if "training_module" in x]
    assert line.startswith("run: warning: ") and "Valid alternatives: trainer." in line
    assert len(started) == 1


def test_run_local_refuses_a_missing_source_before_any_step(
    root: Path, started: list[Any], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = ["--param", f"source_uri={tmp_path / 'nope'}", "--param", f"data_uri={DRINK_SHOPS}"]
    code = main(["run", WEEKLY, "--local", *missing])
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and started == []
    assert err[0].startswith(f'run: error: source_uri = "{tmp_path / "nope"}": it does not exist')
    assert len(err) == 2  # the problem once, then the refusal
