"""Finishing a tuning study on demand after its Spot study lost its capacity.

The rule (:mod:`vertex_retrain.rules.spot_fallback`) decides, as for training. A study does
not start over: the trials that succeeded in the Spot study are kept, and a STANDARD study
runs only the rest of the trial budget (``maxTrialCount`` minus the succeeded trials, with
``parallelTrialCount`` capped by it). Its trials write under ``<base>/on-demand/<id>/`` so they
never overwrite a Spot trial's folder, and their ids are offset past the Spot study's highest
id (Spot trials 1..3, on-demand trials 4..), so every id stays a unique decimal string and the
shared best-trial rule (:mod:`vertex_retrain.rules.trials`, ties to the lowest id) chooses over
both studies' trials. Each on-demand trial's timeout is cut so that all its rounds end within
what is left of the deadline. The on-demand study has its own ``gcp_resources`` file
(``<path>.on-demand``, copied to ``gcp_resources`` once it succeeds) and request key.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from vertex_retrain.backends.base import Backend, JobFailedError, StudyFailedError, StudyTrial
from vertex_retrain.rules.spot_fallback import (
    MIN_FALLBACK_SECONDS,
    FallbackPolicy,
    decide_fallback,
)
from vertex_retrain.rules.trials import SUCCEEDED
from vertex_retrain.steps.spot_fallback import run_on_demand

ON_DEMAND_FOLDER = "on-demand"
"""The on-demand study's trials write under ``<base output directory>/on-demand/``."""


@dataclass(frozen=True)
class StudyFallback:
    """The trials of a study finished on demand.

    Attributes:
        trials: The Spot study's trials, then the on-demand study's (ids offset past them).
        reason: Why the step fell back.
        metrics: ``spot_fallback`` (1.0), ``spot_seconds`` (from the start of the step to the
            Spot study's failure), ``on_demand_seconds``, ``spot_trials_kept`` and
            ``on_demand_trials``.
    """

    trials: list[StudyTrial]
    reason: str
    metrics: dict[str, float] = field(default_factory=dict)


def remaining_trial_budget(max_trial_count: int, trials: Sequence[StudyTrial]) -> int:
    """Trials still to run: ``max_trial_count`` less the trials that succeeded (never < 0)."""
    return max(0, int(max_trial_count) - sum(t.state == SUCCEEDED for t in trials))


def offset_trial_ids(trials: Sequence[StudyTrial], offset: int) -> list[StudyTrial]:
    """The trials with ``offset`` added to each (decimal) id, so they follow another study's."""
    return [
        replace(t, trial_id=str(int(t.trial_id) + offset) if t.trial_id.isdigit() else t.trial_id)
        for t in trials
    ]


def highest_trial_id(trials: Sequence[StudyTrial]) -> int:
    """The highest decimal trial id (0 when there is none)."""
    return max((int(t.trial_id) for t in trials if t.trial_id.isdigit()), default=0)


def on_demand_study_payload(
    payload: dict[str, Any], *, trial_count: int, trial_timeout_seconds: int
) -> dict[str, Any]:
    """The Spot study as an on-demand one for ``trial_count`` trials.

    Strategy STANDARD, each trial's timeout ``trial_timeout_seconds`` (0: unchanged),
    ``parallelTrialCount`` and ``maxFailedTrialCount`` capped by ``trial_count``, and the
    trials' output under ``<base>/on-demand/``.
    """
    study = copy.deepcopy(payload)
    study["maxTrialCount"] = trial_count
    study["parallelTrialCount"] = min(int(payload.get("parallelTrialCount") or 1), trial_count)
    if payload.get("maxFailedTrialCount"):
        study["maxFailedTrialCount"] = min(int(payload["maxFailedTrialCount"]), trial_count)
    spec = study.setdefault("trialJobSpec", {})
    scheduling = spec.setdefault("scheduling", {})
    scheduling["strategy"] = "STANDARD"
    if trial_timeout_seconds > 0:
        scheduling["timeout"] = f"{int(trial_timeout_seconds)}s"
    prefix = spec.get("baseOutputDirectory", {}).get("outputUriPrefix", "")
    if prefix:
        spec["baseOutputDirectory"] = {
            "outputUriPrefix": f"{prefix.rstrip('/')}/{ON_DEMAND_FOLDER}"
        }
    return study


def _capacity_story(failure: JobFailedError, trials: Sequence[StudyTrial]) -> str:
    # A failed study often says only "N trials failed"; its trials say why (STOCKOUT...).
    return "\n".join([str(failure), *(t.message for t in trials if t.message)])


def _trial_timeout(deadline_left: int, trial_timeout: int, trial_count: int, parallel: int) -> int:
    # Trials run in ceil(count / parallel) rounds; each gets its share of what is left.
    if deadline_left <= 0:
        return trial_timeout
    share = deadline_left // math.ceil(trial_count / max(1, min(parallel, trial_count)))
    return min(share, trial_timeout) if trial_timeout > 0 else share


def fall_back_study(
    backend: Backend,
    payload: dict[str, Any],
    failure: JobFailedError,
    *,
    policy: FallbackPolicy,
    trial_timeout_seconds: int,
    spot_seconds: float,
    gcp_resources_path: str,
    request_key: str = "",
    clock: Callable[[], float] = time.monotonic,
) -> StudyFallback | None:
    """Runs the rest of the study on demand if the policy says so; None when it does not.

    Args:
        backend: The backend the Spot study ran on.
        payload: The Spot study's HyperparameterTuningJob payload.
        failure: How the Spot study failed (a :class:`StudyFailedError` carries its trials;
            without them the on-demand study runs the whole budget).
        policy: The fallback policy.
        trial_timeout_seconds: Each trial's own timeout (0: none).
        spot_seconds: Seconds from the start of the step to the Spot study's failure.
        gcp_resources_path: The task's ``gcp_resources`` output.
        request_key: The task's idempotency key; the on-demand study gets its own.
        clock: Monotonic seconds (tests pass a fake).

    Raises:
        FallbackFailedError: The on-demand study failed as well
            (:class:`vertex_retrain.steps.spot_fallback.FallbackFailedError`).
    """
    spot_trials = failure.trials if isinstance(failure, StudyFailedError) else []
    strategy = payload.get("trialJobSpec", {}).get("scheduling", {}).get("strategy", "")
    decision = decide_fallback(
        strategy=str(strategy or "STANDARD"),
        failure=replace(failure.failure, message=_capacity_story(failure, spot_trials)),
        policy=policy,
        elapsed_seconds=spot_seconds,
        job_timeout_seconds=0,  # the deadline alone: the trials' share is worked out below
    )
    if not decision.fall_back:
        return None
    kept = sum(t.state == SUCCEEDED for t in spot_trials)
    metrics = {
        "spot_fallback": 1.0,
        "spot_seconds": float(spot_seconds),
        "on_demand_seconds": 0.0,
        "spot_trials_kept": float(kept),
        "on_demand_trials": 0.0,
    }
    remaining = remaining_trial_budget(int(payload.get("maxTrialCount") or 1), spot_trials)
    if remaining == 0:
        print(
            f"[executor] the Spot study's {kept} trials all succeeded before it failed; "
            "choosing among them, nothing runs on demand",
            flush=True,
        )
        return StudyFallback(list(spot_trials), "every trial had succeeded on Spot", metrics)
    timeout = _trial_timeout(
        decision.timeout_seconds,
        trial_timeout_seconds,
        remaining,
        int(payload.get("parallelTrialCount") or 1),
    )
    if decision.timeout_seconds and timeout < MIN_FALLBACK_SECONDS:
        print(
            f"[executor] no fallback: {remaining} trials cannot fit in the "
            f"{decision.timeout_seconds} s left of the deadline",
            flush=True,
        )
        return None
    print(
        f"[executor] {decision.reason}: keeping the Spot study's {kept} succeeded trials, "
        f"running the other {remaining} (trial timeout {timeout} s)",
        flush=True,
    )
    started = clock()
    on_demand = on_demand_study_payload(
        payload, trial_count=remaining, trial_timeout_seconds=timeout
    )
    study = run_on_demand(
        lambda path, key: backend.run_tuning_job(
            on_demand, gcp_resources_path=path, request_key=key
        ),
        failure,
        what="study",
        gcp_resources_path=gcp_resources_path,
        request_key=request_key,
    )
    metrics.update(on_demand_seconds=float(clock() - started), on_demand_trials=float(remaining))
    trials = [*spot_trials, *offset_trial_ids(study.trials, highest_trial_id(spot_trials))]
    return StudyFallback(trials, decision.reason, metrics)
