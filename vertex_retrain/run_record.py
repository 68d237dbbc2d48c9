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

from vertex_retrain.rules.same_model import is_same_model

__all__ = ["ROLES", "RunRecord", "decision_word", "metrics_by_role", "record_from_summary"]

ROLES = ("candidate", "champion")
"""The models whose metrics a week records (the evaluation's ``<role>_<metric>`` keys); the
references' metrics arrive as ``reference_<name>_<metric>``."""

_WINDOW_KEYS = (
    "source",
    "first_row",
    "last_row",
    "train_rows",
    "selection_rows",
    "gate_rows",
    "gate_periods",
)
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
            last row's time, the training, selection and gate rows, and the gate periods.
        data: The data gate: ``passed``, ``verdict`` and the period's ``statistics``.
        candidate: The candidate's metrics.
        champion: The champion's metrics (empty without a champion).
        references: Each reference's metrics on the same rows, by name.
        decision: ``is_better``, ``reason``, ``candidate_score``, ``champion_score``, of the
            rule: ``primary_metric``, ``reference`` (the one the candidate had to beat) and the
            declared ``metrics``; and what it rested on: ``champion_comparison``
            (``compared``, ``no champion``, ``not comparable: ...``, ``same model: version
            <id>``), ``intervals`` (candidate
            minus ``champion`` / ``reference:<name>``: point, low, high, level) and
            ``override`` (a forced decision and its reason).
        cost: The training cost on Vertex: ``currency``, ``spot_plan``, ``on_demand_plan``,
            the job's ``scheduling_strategy``, whether the run ``trained`` at all, and the
            training tasks ``reused_from_cache`` (not paid for again: left out of the plans).
        goodput: Useful training steps / executed steps.
        restarts: Restarts of the training job after preemptions.
        spot_fallback: When training fell back from Spot to on-demand: the hours of each and
            what they cost (empty otherwise).
        error: Why the run failed.
        training_kind: Which training ran and why: ``kind`` (``warm``, ``full``, or
            ``warm+full`` when the gate refused the warm start and the week retrained fully),
            ``reason``, ``planned`` and, after a refusal, ``warm_attempt`` (empty when the
            pipeline plans no kind).
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
    references: dict[str, dict[str, float]] = field(default_factory=dict)
    decision: dict[str, Any] = field(default_factory=dict)
    cost: dict[str, Any] = field(default_factory=dict)
    goodput: float | None = None
    restarts: int | None = None
    spot_fallback: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    training_kind: dict[str, Any] = field(default_factory=dict)

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
            "first_row": str(self.window.get("first_row", "")),
            "data_gate": _gate_word(self.data),
            "decision": decision_word(self.decision),
            "decision_reason": str(self.decision.get("reason", "")),
            "champion_comparison": str(self.decision.get("champion_comparison", "")),
            "override_reason": str((self.decision.get("override") or {}).get("reason", "")),
            "spot_fallback": "yes" if self.spot_fallback else "no",
            "training_kind": str(self.training_kind.get("kind", "")),
            "training_reason": str(self.training_kind.get("reason", "")),
        }
        return {key: value for key, value in params.items() if value != ""}

    def experiment_metrics(self) -> dict[str, float]:
        """The run's numbers for Vertex AI Experiments and the ``Metrics`` artifact.

        Keys: ``<role>_<metric>`` for the candidate and champion, ``reference_<name>_<metric>``
        for each reference; ``data_<stat>``
        for the gate's statistics; ``goodput``, ``restarts``, ``cost_spot_plan``,
        ``cost_on_demand_plan`` and, after a fallback, ``fallback_*``. Only finite numbers.
        """
        metrics: dict[str, Any] = {}
        for role in ROLES:
            metrics.update({f"{role}_{k}": v for k, v in getattr(self, role).items()})
        for name, values in self.references.items():
            metrics.update({f"reference_{name}_{k}": v for k, v in values.items()})
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


def decision_word(decision: Mapping[str, Any]) -> str:
    """A recorded decision in one word: ``champion`` (promoted), ``challenger`` (refused),
    ``unchanged`` (the candidate was the champion itself: nothing to decide), or "" for a run
    that decided nothing."""
    if "is_better" not in decision:
        return ""
    if is_same_model(decision.get("champion_comparison")):
        return "unchanged"
    return "champion" if decision["is_better"] else "challenger"


def metrics_by_role(
    metrics: Mapping[str, Any],
) -> tuple[dict[str, float], dict[str, float], dict[str, dict[str, float]]]:
    """Splits the evaluation's flat metrics into the candidate's, the champion's and each
    reference's.

    A reference's key is ``reference_<name>_<metric>``; both parts may hold underscores, so
    the metric is the longest candidate metric the key ends with.

    Returns:
        ``(candidate, champion, references)``, finite numbers only.
    """
    split: dict[str, dict[str, float]] = {role: {} for role in ROLES}
    pending: dict[str, float] = {}
    for key, value in metrics.items():
        role, _, name = str(key).partition("_")
        if not name or not _finite(value):
            continue
        if role in split:
            split[role][name] = float(value)
        elif role == "reference":
            pending[name] = float(value)
    references: dict[str, dict[str, float]] = {}
    known = sorted(split["candidate"], key=len, reverse=True)
    for key, value in pending.items():
        metric = next((m for m in known if key.endswith(f"_{m}") and len(key) > len(m) + 1), None)
        if metric is not None:
            references.setdefault(key[: -len(metric) - 1], {})[metric] = value
    return split["candidate"], split["champion"], references


def _decision(decision: Mapping[str, Any]) -> dict[str, Any]:
    """What the record keeps of the decision; the rule becomes its primary metric, its
    reference and its declared metrics; the evidence its comparison, intervals and override."""
    kept = {
        key: decision[key]
        for key in ("is_better", "reason", "candidate_score", "champion_score")
        if key in decision
    }
    rule = decision.get("rule")
    if isinstance(rule, Mapping):
        kept["primary_metric"] = str(rule.get("primary", ""))
        declared = rule.get("reference") or ""
        kept["reference"] = declared if isinstance(declared, str) else str(declared[0])
        declared_metrics = rule.get("metrics") or {}
        kept["metrics"] = [str(name) for name in declared_metrics]
        if isinstance(declared_metrics, Mapping):
            kept["primary_direction"] = str(declared_metrics.get(kept["primary_metric"], ""))
    evidence = decision.get("evidence")
    if isinstance(evidence, Mapping):
        if evidence.get("reference"):
            kept["reference"] = str(evidence["reference"])
        kept["champion_comparison"] = str(evidence.get("champion_comparison", ""))
        kept["intervals"] = dict(evidence.get("intervals") or {})
        kept["override"] = dict(evidence.get("override") or {})
    return kept


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
    candidate, champion, references = metrics_by_role(facts.get("metrics") or {})
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
        candidate=candidate,
        champion=champion,
        references=references,
        decision=_decision(decision),
        cost={
            "currency": cost.get("currency", ""),
            "spot_plan": cost.get("spot"),
            "on_demand_plan": cost.get("on_demand"),
            "assumed_training_hours": cost.get("assumed_training_hours"),
            "scheduling_strategy": cost.get("scheduling_strategy", ""),
            "trained": "training" in facts,
            "reused_from_cache": list(cost.get("reused_from_cache") or []),
        }
        if "spot" in cost
        else {},
        goodput=goodput,
        restarts=None if restarts is None else int(restarts),
        spot_fallback=dict(facts.get("spot_fallback") or {}),
        error=str(facts.get("error", "")),
        training_kind=dict(facts.get("training_kind") or {}),
    )
