"""The record a weekly run leaves: its window, data, metrics, decision, cost and goodput.

The run summary (the exit handler) builds one :class:`RunRecord` from its facts and hands it
to the backend: the local backend keeps it in the registry database, the Vertex backend logs
it as one Vertex AI Experiments run. ``vertex-retrain history`` reads the local ones back.

Pure: no I/O, no third-party import.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

__all__ = ["ROLES", "RunRecord", "record_from_summary"]

ROLES = ("candidate", "champion", "baseline")
"""The models whose metrics a week records (the evaluation's ``<role>_<metric>`` keys)."""

_WINDOW_KEYS = ("source", "first_transaction", "last_transaction", "train_rows", "validation_rows")
"""What the record keeps of the summary's ``data_window`` besides ``as_of``."""


@dataclass(frozen=True)
class RunRecord:
    """One pipeline run of a model, as the history shows it.

    Attributes:
        run: The pipeline run's name.
        model: The model's display name.
        backend: ``local`` or ``vertex``.
        state: The run's final state (``SUCCEEDED``, ``FAILED``...).
        recorded_at: When the record was written (UTC, RFC 3339).
        as_of: The end of the run's data window (``YYYY-MM-DD``), "" when unknown.
        window: How the window was set (``source``: parameter, schedule...), its first and
            last transaction, and the training and validation rows.
        data: The data gate: ``passed``, ``verdict`` and the week's ``statistics``.
        candidate: The candidate's metrics.
        champion: The champion's metrics (empty without a champion).
        baseline: The popularity baseline's metrics.
        decision: ``is_better``, ``reason``, ``candidate_score``, ``champion_score``.
        cost: The training cost on Vertex: ``currency``, ``spot_plan``, ``on_demand_plan``.
        goodput: Useful training steps / executed steps.
        restarts: Restarts of the training job after preemptions.
        spot_fallback: When training fell back from Spot to on-demand: the hours of each and
            what they cost (empty otherwise).
        error: Why the run failed.
    """

    run: str
    model: str
    backend: str
    state: str
    recorded_at: str = ""
    as_of: str = ""
    window: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)
    candidate: dict[str, float] = field(default_factory=dict)
    champion: dict[str, float] = field(default_factory=dict)
    baseline: dict[str, float] = field(default_factory=dict)
    decision: dict[str, Any] = field(default_factory=dict)
    cost: dict[str, Any] = field(default_factory=dict)
    goodput: float | None = None
    restarts: int | None = None
    spot_fallback: dict[str, Any] = field(default_factory=dict)
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form (what ``history --json`` prints and the database stores)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> RunRecord:
        """The inverse of :meth:`to_dict`; unknown keys (a newer writer's) are ignored."""
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in raw.items() if key in known})

    def experiment_params(self) -> dict[str, str | float | int]:
        """The run's parameters for Vertex AI Experiments (strings and numbers only)."""
        params: dict[str, str | float | int] = {
            "model": self.model,
            "backend": self.backend,
            "state": self.state,
            "as_of": self.as_of,
            "window_source": str(self.window.get("source", "")),
            "first_transaction": str(self.window.get("first_transaction", "")),
            "data_gate": _gate_word(self.data),
            "decision": _decision_word(self.decision),
            "decision_reason": str(self.decision.get("reason", "")),
            "spot_fallback": "yes" if self.spot_fallback else "no",
        }
        return {key: value for key, value in params.items() if value != ""}

    def experiment_metrics(self) -> dict[str, float]:
        """The run's numbers for Vertex AI Experiments and the ``Metrics`` artifact.

        Keys: ``<role>_<metric>`` for the candidate, champion and baseline; ``data_<stat>``
        for the gate's statistics; ``goodput``, ``restarts``, ``cost_spot_plan``,
        ``cost_on_demand_plan`` and, after a fallback, ``fallback_*``. Only finite numbers.
        """
        metrics: dict[str, Any] = {}
        for role in ROLES:
            metrics.update({f"{role}_{k}": v for k, v in getattr(self, role).items()})
        statistics = self.data.get("statistics") or {}
        metrics.update({f"data_{k}": v for k, v in statistics.items()})
        metrics["goodput"] = self.goodput
        metrics["restarts"] = self.restarts
        metrics["cost_spot_plan"] = self.cost.get("spot_plan")
        metrics["cost_on_demand_plan"] = self.cost.get("on_demand_plan")
        metrics.update({f"fallback_{k}": v for k, v in self.spot_fallback.items()})
        return {key: float(value) for key, value in metrics.items() if _finite(value)}


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _number(value: Any) -> float | None:
    return float(value) if _finite(value) else None


def _gate_word(data: Mapping[str, Any]) -> str:
    if "passed" not in data:
        return ""
    return "passed" if data["passed"] else "breached"


def _decision_word(decision: Mapping[str, Any]) -> str:
    if "is_better" not in decision:
        return ""
    return "champion" if decision["is_better"] else "challenger"


def _by_role(metrics: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """Splits the evaluation's flat ``<role>_<metric>`` metrics by role."""
    split: dict[str, dict[str, float]] = {role: {} for role in ROLES}
    for key, value in metrics.items():
        role, _, name = str(key).partition("_")
        if role in split and name and _finite(value):
            split[role][name] = float(value)
    return split


def record_from_summary(
    facts: Mapping[str, Any], *, model: str, backend: str, recorded_at: str = ""
) -> RunRecord:
    """Builds the record from the run summary's facts (``vertex_retrain.steps.summary``).

    Args:
        facts: The summary (``pipeline_run``, ``state``, ``data_window``, ``data_gate``,
            ``metrics``, ``decision``, ``training``, ``cost_on_vertex``, ``spot_fallback``).
        model: The model's display name.
        backend: ``local`` or ``vertex``.
        recorded_at: When (UTC, RFC 3339).
    """
    window = facts.get("data_window") or {}
    gate = facts.get("data_gate") or {}
    decision = facts.get("decision") or {}
    training = facts.get("training") or {}
    cost = facts.get("cost_on_vertex") or {}
    roles = _by_role(facts.get("metrics") or {})
    goodput = _number(training.get("goodput"))
    restarts = _number(training.get("restarts"))
    return RunRecord(
        run=str(facts.get("pipeline_run", "")),
        model=model,
        backend=backend,
        state=str(facts.get("state", "")),
        recorded_at=recorded_at,
        as_of=str(window.get("as_of", "") or ""),
        window={key: window[key] for key in _WINDOW_KEYS if key in window},
        data={key: gate[key] for key in ("passed", "verdict", "statistics") if key in gate},
        candidate=roles["candidate"],
        champion=roles["champion"],
        baseline=roles["baseline"],
        decision={
            key: decision[key]
            for key in ("is_better", "reason", "candidate_score", "champion_score")
            if key in decision
        },
        cost={
            "currency": cost.get("currency", ""),
            "spot_plan": cost.get("spot"),
            "on_demand_plan": cost.get("on_demand"),
            "assumed_training_hours": cost.get("assumed_training_hours"),
        }
        if "spot" in cost
        else {},
        goodput=goodput,
        restarts=None if restarts is None else int(restarts),
        spot_fallback=dict(facts.get("spot_fallback") or {}),
        error=str(facts.get("error", "")),
    )
