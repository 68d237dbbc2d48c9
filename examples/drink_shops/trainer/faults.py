"""Fault injection for tests: every hook the trainer honours, off unless a test turns it on.

Only ``trainer.task`` reads the switch, once at start-up, and passes the parsed
:class:`Faults` to the training loop and the checkpoint manager; code that builds those
directly (benchmarks, unit tests) gets :data:`NO_FAULTS`. The switch is one environment
variable, ``TRAINER_FAULTS``, holding a JSON object; :func:`faults_env` builds it for a test.
Nothing outside tests sets it, and a set switch is logged as a warning.

Faults (JSON keys):
    sigterm_at_step (int): after completing step N, the trainer sends itself SIGTERM, so a
        test gets a preemption at an exact step (tests/test_trainer_training.py,
        tests/test_bench_goodput.py).
    step_sleep_s (float): sleep this long after every step, so that progress is bounded by
        running time, for tests that preempt on a clock (tests/test_faults_training.py).
    hold_at_step (int): after completing step N, print :func:`pause_marker` (phase
        ``step``) to stderr and wait until SIGTERM requests a stop (at most
        :data:`HOLD_LIMIT_S`), so a test signals the process from outside at exactly that
        step, however slowly either process runs (tests/test_trainer_training.py,
        tests/test_faults_training.py).
    pause_in (``"checkpoint"``, ``"evaluate"`` or ``"resume"``) and pause_s (float, > 0):
        print :func:`pause_marker` to stderr, then sleep ``pause_s`` seconds at that point:
        ``checkpoint`` between a checkpoint's data file and its SHA-256 sidecar,
        ``evaluate`` just before evaluation, ``resume`` before each checkpoint is read at
        start-up (the step is the checkpoint's). A test waits for the marker and signals the
        process inside that window (tests/test_faults_training.py,
        tests/test_trainer_planted_checkpoints.py).

An unknown key or a bad value stops the trainer with an error naming it, so a misspelt fault
can never pass a test silently.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

FAULTS_ENV = "TRAINER_FAULTS"
PAUSE_PHASES = ("checkpoint", "evaluate", "resume")
HOLD_LIMIT_S = 300.0
"""A held trainer that never gets its SIGTERM carries on after this long."""


@dataclass(frozen=True)
class Faults:
    """The faults to inject; the default instance injects none. Fields as in the module doc."""

    sigterm_at_step: int | None = None
    step_sleep_s: float = 0.0
    hold_at_step: int | None = None
    pause_in: str | None = None
    pause_s: float = 0.0

    def __post_init__(self) -> None:
        if self.sigterm_at_step is not None and self.sigterm_at_step < 1:
            raise ValueError(
                f"{FAULTS_ENV}: sigterm_at_step must be >= 1, got {self.sigterm_at_step}"
            )
        if self.hold_at_step is not None and self.hold_at_step < 1:
            raise ValueError(f"{FAULTS_ENV}: hold_at_step must be >= 1, got {self.hold_at_step}")
        if self.step_sleep_s < 0:
            raise ValueError(f"{FAULTS_ENV}: step_sleep_s must be >= 0, got {self.step_sleep_s}")
        if self.pause_in is not None and self.pause_in not in PAUSE_PHASES:
            raise ValueError(
                f"{FAULTS_ENV}: pause_in must be one of {', '.join(PAUSE_PHASES)}; "
                f"got {self.pause_in!r}"
            )
        if (self.pause_in is None) != (self.pause_s <= 0):
            raise ValueError(
                f"{FAULTS_ENV}: pause_in and pause_s (> 0) go together; got pause_in="
                f"{self.pause_in!r}, pause_s={self.pause_s}"
            )

    @property
    def active(self) -> bool:
        """True when any fault is on."""
        return self != NO_FAULTS

    def hold(self, step: int, stopped: Callable[[], bool]) -> None:
        """After `step`, announce and wait for `stopped()` when this run holds there."""
        if step != self.hold_at_step:
            return
        print(pause_marker(os.getpid(), "step", step), file=sys.stderr, flush=True)
        deadline = time.monotonic() + HOLD_LIMIT_S
        while not stopped() and time.monotonic() < deadline:
            time.sleep(0.01)

    def pause(self, phase: str, step: int) -> None:
        """Announce and sleep when this run pauses in `phase` (a no-op otherwise)."""
        if self.pause_in == phase:
            print(pause_marker(os.getpid(), phase, step), file=sys.stderr, flush=True)
            time.sleep(self.pause_s)


NO_FAULTS = Faults()


def parse_faults(text: str) -> Faults:
    """Parses the JSON object of ``TRAINER_FAULTS``; an empty text means no faults.

    Raises:
        ValueError: not a JSON object, an unknown key, or a bad value (each named).
    """
    if not text.strip():
        return NO_FAULTS
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{FAULTS_ENV} is not JSON ({error}): {text!r}") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{FAULTS_ENV} must be a JSON object, got {text!r}")
    known = set(Faults.__dataclass_fields__)
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ValueError(
            f"{FAULTS_ENV}: unknown fault(s) {', '.join(unknown)}; "
            f"known: {', '.join(sorted(known))}"
        )
    kinds: dict[str, tuple[type, ...]] = {
        "sigterm_at_step": (int,),
        "hold_at_step": (int,),
        "step_sleep_s": (int, float),
        "pause_s": (int, float),
        "pause_in": (str,),
    }
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, kinds[key])):
            wanted = " or ".join(kind.__name__ for kind in kinds[key])
            raise ValueError(f"{FAULTS_ENV}: {key} must be {wanted}, got {value!r}")
        # JSON has one number type: seconds given as 1 become 1.0, as the fields declare.
        values[key] = float(value) if isinstance(value, int) and float in kinds[key] else value
    return Faults(**values)


def faults_from_env(environ: Mapping[str, str] | None = None) -> Faults:
    """The faults ``TRAINER_FAULTS`` asks for in `environ` (default: this process's)."""
    env = os.environ if environ is None else environ
    return parse_faults(env.get(FAULTS_ENV, ""))


def faults_env(**faults: Any) -> dict[str, str]:
    """The environment entry that turns `faults` on in a trainer process, checked first.

    Example: ``subprocess.run([...], env={**env, **faults_env(sigterm_at_step=10)})``.
    """
    checked = Faults(**faults)
    values = {
        key: value for key, value in asdict(checked).items() if value != asdict(NO_FAULTS)[key]
    }
    return {FAULTS_ENV: json.dumps(values, sort_keys=True)}


def pause_marker(pid: int, phase: str, step: int | None = None) -> str:
    """The stderr line a paused trainer prints; without `step`, the prefix up to the step."""
    prefix = f"{FAULTS_ENV}: pid {pid} paused in {phase} at step "
    return prefix if step is None else f"{prefix}{step}"
