"""trainer.faults: one documented switch for the trainer's test hooks, off unless set."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trainer.checkpoint import CheckpointManager
from trainer.faults import (
    FAULTS_ENV,
    NO_FAULTS,
    Faults,
    faults_env,
    faults_from_env,
    parse_faults,
    pause_marker,
)


def test_faults_are_off_without_the_variable() -> None:
    assert faults_from_env({"PATH": "/bin", "TRAINER_TEST_SIGTERM_AT_STEP": "3"}) == NO_FAULTS
    assert not faults_from_env({FAULTS_ENV: "  "}).active


def test_faults_env_round_trips_through_the_trainer_parser() -> None:
    env = faults_env(sigterm_at_step=10, step_sleep_s=0.05)
    assert list(env) == [FAULTS_ENV]
    parsed = faults_from_env(env)
    assert parsed == Faults(sigterm_at_step=10, step_sleep_s=0.05) and parsed.active
    paused = faults_from_env(faults_env(pause_in="evaluate", pause_s=1))
    assert (paused.pause_in, paused.pause_s) == ("evaluate", 1.0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("sigterm_at_step=3", "is not JSON"),
        ("[1]", "must be a JSON object"),
        (
            '{"sigterm_at_stp": 3}',
            "unknown fault.*sigterm_at_stp; known: hold_at_step, pause_in, pause_s, sigterm",
        ),
        ('{"step_sleep_s": "fast"}', "step_sleep_s must be int or float, got 'fast'"),
        ('{"sigterm_at_step": true}', "sigterm_at_step must be int, got True"),
        ('{"hold_at_step": 2.5}', "hold_at_step must be int, got 2.5"),
        ('{"pause_in": 3, "pause_s": 1}', "pause_in must be str, got 3"),
        ('{"sigterm_at_step": 0}', "sigterm_at_step must be >= 1, got 0"),
        ('{"pause_in": "export", "pause_s": 1}', "pause_in must be one of checkpoint, evaluate"),
        ('{"pause_in": "evaluate"}', "pause_in and pause_s .* go together"),
    ],
)
def test_faults_bad_switch_is_refused_naming_the_fault(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_faults(text)


def test_faults_hold_waits_at_its_step_until_a_stop_is_requested(
    capsys: pytest.CaptureFixture[str],
) -> None:
    faults = Faults(hold_at_step=3)
    asked: list[int] = []

    def stopped() -> bool:
        asked.append(1)
        return len(asked) >= 3  # the stop arrives while the trainer holds

    faults.hold(2, stopped)
    assert asked == [] and capsys.readouterr().err == ""
    faults.hold(3, stopped)
    assert len(asked) == 3
    assert capsys.readouterr().err.strip() == pause_marker(os.getpid(), "step", 3)


def test_faults_pause_announces_itself_in_its_phase_only(
    capsys: pytest.CaptureFixture[str],
) -> None:
    faults = Faults(pause_in="checkpoint", pause_s=0.001)
    faults.pause("evaluate", 4)
    assert capsys.readouterr().err == ""
    faults.pause("checkpoint", 4)
    line = capsys.readouterr().err.strip()
    assert line == pause_marker(os.getpid(), "checkpoint", 4)
    assert line.startswith(pause_marker(os.getpid(), "checkpoint"))


def test_faults_checkpoint_manager_pauses_between_data_and_sidecar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manager = CheckpointManager(tmp_path, faults=Faults(pause_in="checkpoint", pause_s=0.001))
    manager.save(3, {"step": 3})
    assert capsys.readouterr().err.strip() == pause_marker(os.getpid(), "checkpoint", 3)
    assert CheckpointManager(tmp_path).load(3)["step"] == 3
