"""Local hyperparameter tuning from a Vertex HyperparameterTuningJob payload.

Each trial is a local CustomJob built from `trialJobSpec`, with the trial's parameters
appended as `--name=value` flags to every worker pool's args, `CLOUD_ML_TRIAL_ID` and
`CLOUD_ML_HP_METRIC_FILE` set, and its own output folder `<base>/<trial_id>/`. The metric
is read from the cloudml-hypertune file (JSON lines keyed by metric id); a trial that never
reported it fails with a message saying so.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from vertex_retrain.atomic_files import atomic_write_json
from vertex_retrain.backends.local.jobs.executor import CANCELLED, FAILED, SUCCEEDED, run_custom_job
from vertex_retrain.backends.local.jobs.job_payload import JobSpecError, base_output_uri, new_job_id
from vertex_retrain.backends.local.jobs.job_sandbox import HYPERTUNE_FILE_VARIABLE
from vertex_retrain.backends.local.storage import local_root
from vertex_retrain.backends.local.studies import study_spec as ss
from vertex_retrain.rules.flags import parameter_flags
from vertex_retrain.rules.trials import best_trial_or_none

if TYPE_CHECKING:
    import optuna

    from vertex_retrain.backends.local.jobs.spot import PreemptionSchedule

TRIAL_SUCCEEDED = "SUCCEEDED"
TRIAL_INFEASIBLE = "INFEASIBLE"
METRIC_FILE = "output.metrics"


@dataclass(frozen=True)
class TrialResult:
    """One trial: Vertex's trial id, parameters, final metric and state."""

    trial_id: str
    parameters: dict[str, Any]
    metric: float | None
    state: str  # SUCCEEDED or INFEASIBLE, as Vertex names trial states
    error: str | None
    model_dir: str | None
    job_id: str


@dataclass
class TuningResult:
    """A finished local study."""

    job_id: str
    state: str
    error: str | None
    metric_id: str
    goal: str
    trials: list[TrialResult] = field(default_factory=list)
    wall_seconds: float = 0.0

    @property
    def best(self) -> TrialResult | None:
        """The best trial by the shared rule (`vertex_retrain.rules.trials`), or None.

        Never a failed trial or one without a finite metric; ties go to the lowest trial id.
        """
        return best_trial_or_none(self.trials, self.goal)

    def table(self) -> str:
        """The trials as a fixed-width text table."""
        rows = [("trial", "state", self.metric_id, "parameters", "error / model dir")]
        for t in sorted(self.trials, key=lambda t: int(t.trial_id)):
            params = " ".join(f"{k}={_show(v)}" for k, v in t.parameters.items())
            metric = "" if t.metric is None else f"{t.metric:.6g}"
            rows.append((t.trial_id, t.state, metric, params, t.error or t.model_dir or ""))
        widths = [max(len(str(row[i])) for row in rows) for i in range(4)]
        return "\n".join(
            "  ".join(
                str(cell).ljust(widths[i]) if i < 4 else str(cell) for i, cell in enumerate(row)
            )
            for row in rows
        )


def _show(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def read_metric(path: Path, metric_id: str, *, selection: str, goal: str) -> float | None:
    """Read a metric from a cloudml-hypertune output file.

    Args:
        path: The file named by `CLOUD_ML_HP_METRIC_FILE`.
        metric_id: Key of the metric in each JSON line.
        selection: LAST_MEASUREMENT (Vertex's default) or BEST_MEASUREMENT.
        goal: MAXIMIZE or MINIMIZE (decides "best").

    Returns:
        The selected value, or None when the metric was never reported.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return None
    values = []
    for line in lines:
        try:
            record = json.loads(line)
            values.append(float(record[metric_id]))
        except (ValueError, KeyError, TypeError):
            continue
    if not values:
        return None
    if selection == "BEST_MEASUREMENT":
        return max(values) if goal == "MAXIMIZE" else min(values)
    return values[-1]


def trial_payload(
    trial_spec: dict[str, Any], params: dict[str, Any], base: str | None, trial_id: str
) -> dict[str, Any]:
    """Build a trial's CustomJob: flags appended to every pool, output under `<base>/<id>`."""
    spec = copy.deepcopy(trial_spec)
    # Rendered as every other flag is (`rules.flags`): an integral double is "16", not "16.0".
    flags = parameter_flags(params)
    for pool in spec.get("workerPoolSpecs", []):
        for key in ("containerSpec", "pythonPackageSpec"):
            if key in pool:
                pool[key]["args"] = [*(pool[key].get("args") or []), *flags]
    if base:
        spec["baseOutputDirectory"] = {"outputUriPrefix": f"{base}/{trial_id}"}
    return {"displayName": f"trial-{trial_id}", "jobSpec": spec}


class _Study:
    """State shared by the trial threads of one study."""

    def __init__(
        self,
        payload: dict[str, Any],
        job_id: str,
        root: Path,
        preemption: PreemptionSchedule | None = None,
    ) -> None:
        study = payload.get("studySpec") or {}
        metrics = study.get("metrics") or []
        if len(metrics) != 1 or not metrics[0].get("metricId"):
            raise JobSpecError(
                f"studySpec.metrics must hold exactly one metric locally, got {metrics!r}"
            )
        self.metric_id = str(metrics[0]["metricId"])
        self.goal = str(metrics[0].get("goal") or "MAXIMIZE")
        if self.goal not in {"MAXIMIZE", "MINIMIZE"}:
            raise JobSpecError(
                f"studySpec.metrics[0].goal must be MAXIMIZE or MINIMIZE, got {self.goal!r}"
            )
        self.selection = str(study.get("measurementSelectionType") or "LAST_MEASUREMENT")
        self.params = [ss.parse_param(p) for p in study.get("parameters") or []]
        if not self.params:
            raise JobSpecError("studySpec.parameters is empty; list the parameters to tune")
        self.algorithm = str(study.get("algorithm") or "ALGORITHM_UNSPECIFIED")
        self.trial_spec = payload.get("trialJobSpec") or {}
        self.base = base_output_uri(self.trial_spec)
        self.max_trials = int(payload.get("maxTrialCount") or 1)
        self.parallel = max(1, int(payload.get("parallelTrialCount") or 1))
        self.max_failed = int(payload.get("maxFailedTrialCount") or 0)
        self.job_id, self.root = job_id, root
        self.preemption = preemption
        self.trials: dict[int, TrialResult] = {}
        self.lock = threading.Lock()
        self.cancel = threading.Event()
        self.failure: str | None = None


def _check_payload(payload: dict[str, Any]) -> None:
    from vertex_retrain.specs.validate import validate_tuning_job

    errors = [p.describe() for p in validate_tuning_job(payload) if p.severity == "error"]
    if errors:
        raise JobSpecError("cannot run this tuning job:\n  " + "\n  ".join(errors))


def _run_trial(
    study: _Study, trial: optuna.trial.Trial, on_log: Callable[[str], None] | None
) -> float:
    import optuna

    trial_id = str(trial.number + 1)
    params = ss.suggest(trial, study.params)
    trial_dir = study.root / "jobs" / study.job_id / "trials" / trial_id
    metric_file = trial_dir / METRIC_FILE
    job_id = f"{study.job_id}-trial-{trial_id}"
    payload = trial_payload(study.trial_spec, params, study.base, trial_id)
    if study.cancel.is_set():
        raise optuna.TrialPruned("the study stopped before this trial started")
    result = run_custom_job(
        payload,
        job_id=job_id,
        root=study.root,
        trial_id=trial_id,
        extra_env={HYPERTUNE_FILE_VARIABLE: str(metric_file)},
        on_log=(lambda line: on_log(f"[trial {trial_id}]{line}")) if on_log else None,
        cancel=study.cancel,
        preemption=study.preemption,
    )
    metric = read_metric(metric_file, study.metric_id, selection=study.selection, goal=study.goal)
    error = result.error
    if result.state == SUCCEEDED and metric is None:
        error = (
            f"trial {trial_id} succeeded but never reported metric {study.metric_id!r}; call "
            f"hypertune.HyperTune().report_hyperparameter_tuning_metric({study.metric_id!r}, v)"
        )
    elif result.failure is not None:
        error = f"{result.error}: {result.failure.advice.splitlines()[0]}"
    elif result.state == CANCELLED and study.failure:
        error = "stopped early: the study reached maxFailedTrialCount"
    ok = result.state == SUCCEEDED and metric is not None
    record = TrialResult(
        trial_id=trial_id,
        parameters=params,
        metric=metric if ok else None,
        state=TRIAL_SUCCEEDED if ok else TRIAL_INFEASIBLE,
        error=None if ok else error,
        model_dir=result.model_dir,
        job_id=job_id,
    )
    with study.lock:
        study.trials[trial.number] = record
    if not ok:
        raise _TrialFailedError(error or "trial failed")
    assert metric is not None
    return metric


class _TrialFailedError(Exception):
    """A trial that failed or never reported; optuna records it as FAIL."""


def _after_trial(study: _Study) -> Callable[[optuna.Study, optuna.trial.FrozenTrial], None]:
    def callback(optuna_study: optuna.Study, _: optuna.trial.FrozenTrial) -> None:
        with study.lock:
            failed = sum(t.state == TRIAL_INFEASIBLE for t in study.trials.values())
        if study.max_failed and failed >= study.max_failed and study.failure is None:
            study.failure = (
                f"{failed} trials failed, reaching maxFailedTrialCount={study.max_failed}; "
                "the study was stopped (see the trials table for each error)"
            )
            study.cancel.set()
        if study.cancel.is_set():
            optuna_study.stop()

    return callback


def run_tuning_job(
    payload: dict[str, Any],
    *,
    root: Path | None = None,
    seed: int = 0,
    job_id: str | None = None,
    on_log: Callable[[str], None] | None = None,
    preemption: PreemptionSchedule | None = None,
) -> TuningResult:
    """Run a Vertex HyperparameterTuningJob payload locally with Optuna.

    Args:
        payload: The HyperparameterTuningJob REST dict (studySpec, trialJobSpec,
            maxTrialCount, parallelTrialCount, maxFailedTrialCount).
        root: Local storage root; defaults to `local_root()`.
        seed: Sampler seed, so a study can be replayed.
        job_id: Folder name under `<root>/jobs/`; generated from displayName when None.
        on_log: Receives each log line prefixed with `[trial N]`; None prints them.
        preemption: Spot rehearsal for every trial (each is a SPOT job then): a trial
            preempted a seventh time fails with `STOCKOUT`.

    Returns:
        Every trial (parameters, metric, state, error, model dir) and the best one.

    Raises:
        JobSpecError, StudySpecError: The payload cannot be run; no trial was started.
    """
    import optuna

    from vertex_retrain.backends.local.jobs.supervisor import cancel_on_signals

    _check_payload(payload)
    root = (root or local_root()).resolve()
    job_id = job_id or new_job_id(str(payload.get("displayName", "tuning")))
    study = _Study(payload, job_id, root, preemption)
    sampler = ss.make_sampler(study.algorithm, study.params, seed)
    n_trials = study.max_trials
    if study.algorithm == "GRID_SEARCH":
        n_trials = min(n_trials, ss.grid_size(study.params))
    direction: Literal["maximize", "minimize"] = (
        "maximize" if study.goal == "MAXIMIZE" else "minimize"
    )
    # Trial failures are reported in the result; optuna's own warnings would repeat them.
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    opt = optuna.create_study(sampler=sampler, direction=direction)
    log = on_log or (lambda line: print(line, flush=True))
    started = time.monotonic()
    with cancel_on_signals(study.cancel):
        opt.optimize(
            lambda trial: _run_trial(study, trial, log),
            n_trials=n_trials,
            n_jobs=study.parallel,
            catch=(_TrialFailedError,),
            callbacks=[_after_trial(study)],
        )
    result = TuningResult(
        job_id=job_id,
        state=SUCCEEDED,
        error=None,
        metric_id=study.metric_id,
        goal=study.goal,
        trials=sorted(study.trials.values(), key=lambda t: int(t.trial_id)),
        wall_seconds=time.monotonic() - started,
    )
    if study.failure:
        result.state, result.error = FAILED, study.failure
    elif study.cancel.is_set():
        result.state, result.error = CANCELLED, "the tuning job was cancelled"
    elif result.best is None:
        result.state, result.error = FAILED, "no trial succeeded and reported the metric"
    atomic_write_json(root / "jobs" / job_id / "tuning.json", _record(result))
    return result


def _record(result: TuningResult) -> dict[str, Any]:
    best = result.best
    return {
        "job_id": result.job_id,
        "state": result.state,
        "error": result.error,
        "metric_id": result.metric_id,
        "goal": result.goal,
        "best_trial": best.trial_id if best else None,
        "trials": [t.__dict__ for t in result.trials],
        "wall_seconds": round(result.wall_seconds, 3),
    }
