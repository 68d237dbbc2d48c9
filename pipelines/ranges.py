"""The allowed range of a numeric pipeline parameter, by its name, for any pipeline.

A parameter named like one of the components' inputs means the same thing whatever pipeline
declares it (``accelerator_count`` is accelerators per replica in a user's pipeline as in the
templates), so its range holds there too. ``vertex-retrain run``, ``estimate`` and
``preflight`` refuse a ``--param`` value outside it before anything runs, naming the parameter
and the range (:mod:`vertex_retrain.cli.params`): a run started with ``accelerator_count=-1``
would only fail later, in a step, with a message about something else. A name not listed here
(a model's own hyperparameters, or ``min_improvement``, whose scale is the metric's) has no
range.

Standard library only (and :mod:`vertex_retrain.rules`): the command line reads it at start.
"""

from __future__ import annotations

from vertex_retrain.rules.retention import MIN_KEEP_LAST_N

__all__ = ["PARAMETER_RANGES"]

_WEEK_S = 7 * 24 * 3600

PARAMETER_RANGES: dict[str, tuple[int | float, int | float]] = {
    "selection_periods": (0, 366),
    "gate_periods": (1, 366),
    "max_trial_count": (1, 1000),
    "parallel_trial_count": (1, 100),
    "max_failed_trial_count": (0, 1000),
    "accelerator_count": (0, 16),
    "worker_count": (0, 64),
    "timeout_seconds": (60, _WEEK_S),
    "expected_training_hours": (0, 168),
    "traffic_percentage": (0, 100),
    "keep_last_n": (MIN_KEEP_LAST_N, 100),
    "local_preemption_after_seconds": (0, _WEEK_S),
    "spot_fallback_deadline_seconds": (0, _WEEK_S),
}
"""Parameter name -> allowed range, both ends included."""
