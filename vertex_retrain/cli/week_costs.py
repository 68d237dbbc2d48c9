"""What each kind of week costs on Vertex, and a typical month, for a pipeline that warm starts.

A pipeline that declares ``full_retrain_every_weeks`` (the weekly template) trains one of two
ways each week (:mod:`vertex_retrain.rules.warm_start`): a warm start from the champion
(``expected_warm_training_hours``) or a full retrain (``expected_training_hours``); when the
gate refuses a warm-started candidate, the week also retrains fully (its job carries
:data:`~vertex_retrain.rules.warm_start.REFUSAL_RETRAIN_LABELS`). This prices the three weeks
and a month of ``365.25 / 12 / 7`` weeks with one full retrain every N weeks, no refusal
assumed (each refusal adds the refused week's extra), on-demand against Spot. A trainer that
declares no warm start (:mod:`vertex_retrain.cli.trainer_declaration`) retrains fully every
week of the month; one whose declaration could not be read is assumed to warm start, and the
assumption says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vertex_retrain.rules.warm_start import REFUSAL_RETRAIN_LABELS
from vertex_retrain.specs import estimate_job_cost
from vertex_retrain.specs.defaults import TRAINING

if TYPE_CHECKING:
    from vertex_retrain.cli.trainer_declaration import TrainerWarmStart

WEEKS_PER_MONTH = 365.25 / 12 / 7
"""Weeks in an average month."""


@dataclass(frozen=True)
class WeekCost:
    """One kind of week: its training hours and what they cost (None: a price is unknown)."""

    kind: str
    hours: float
    on_demand: float | None
    spot: float | None


@dataclass(frozen=True)
class WeekKinds:
    """Both kinds of week, the refused warm start, and a typical month.

    Attributes:
        full: A full retrain's week.
        warm: A warm start's week.
        refused: A warm start refused by the gate, then a full retrain in the same run.
        month: A month of :data:`WEEKS_PER_MONTH` weeks, one full retrain every
            ``full_retrain_every_weeks`` (every week when warm starts are off).
        all_full_month: The same month with every week retrained fully.
        full_weeks_per_month: Full retrains in that month.
        currency: The prices' currency.
        assumption: What the month assumes, in one sentence.
        trainer_declares_warm_start: What the trainer's ``pyproject.toml`` declares (None:
            it could not be read).
    """

    full: WeekCost
    warm: WeekCost
    refused: WeekCost
    month: WeekCost
    all_full_month: WeekCost
    full_weeks_per_month: float
    currency: str
    assumption: str
    trainer_declares_warm_start: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form (``estimate --json``'s ``week_kinds``)."""
        weeks = (self.full, self.warm, self.refused, self.month, self.all_full_month)
        return {
            "weeks": [vars(week) for week in weeks],
            "full_weeks_per_month": self.full_weeks_per_month,
            "currency": self.currency,
            "assumption": self.assumption,
            "trainer_declares_warm_start": self.trainer_declares_warm_start,
        }


def is_refusal_retrain(payload: Mapping[str, Any] | None) -> bool:
    """Whether a job is the full retrain that follows a refused warm start (by its labels)."""
    labels = (payload or {}).get("labels") or {}
    return all(labels.get(key) == value for key, value in REFUSAL_RETRAIN_LABELS.items())


def _total(values: Sequence[float | None]) -> float | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def _priced(kind: str, payloads: Sequence[dict[str, Any]], hours: float, location: str) -> WeekCost:
    steps = [estimate_job_cost(p, hours, label=kind, location=location) for p in payloads]
    return WeekCost(
        kind,
        hours * len(payloads),
        _total([s.on_demand_cost for s in steps]),
        _total([s.spot_cost for s in steps]),
    )


def _sum(kind: str, weeks: Sequence[tuple[float, WeekCost]]) -> WeekCost:
    def part(name: str) -> float | None:
        values = [(share, getattr(week, name)) for share, week in weeks]
        return _total([None if v is None else share * v for share, v in values])

    hours = sum(share * week.hours for share, week in weeks)
    return WeekCost(kind, hours, part("on_demand"), part("spot"))


def estimate_week_kinds(
    planned: Sequence[dict[str, Any]],
    refusal: Sequence[dict[str, Any]],
    arguments: Mapping[str, Any],
    *,
    full_hours: float,
    location: str,
    currency: str = "",
    trainer: TrainerWarmStart | None = None,
) -> WeekKinds | None:
    """Prices the kinds of week of a pipeline that declares ``full_retrain_every_weeks``.

    Args:
        planned: The payloads of the training jobs every week runs (the planned kind's).
        refusal: The payloads of the full retrain after a refused warm start.
        arguments: The run's parameters (``warm_start``, ``full_retrain_every_weeks``,
            ``expected_warm_training_hours``, ``tune``).
        full_hours: Hours of one full training job.
        location: The region whose prices apply.
        currency: The prices' currency, for the record.
        trainer: What the trainer declares (:mod:`vertex_retrain.cli.trainer_declaration`):
            a trainer that declares no warm start retrains fully every week; None or an
            unknown declaration keeps the warm weeks, and the assumption says why.

    Returns:
        The estimate; None for a pipeline without ``full_retrain_every_weeks``.
    """
    if "full_retrain_every_weeks" not in arguments:
        return None
    every = int(arguments.get("full_retrain_every_weeks") or 0)
    declared = arguments.get("expected_warm_training_hours")
    warm_hours = TRAINING.expected_warm_training_hours if declared is None else float(declared)
    # A warm start continues the champion on the newest weeks: never longer than a full retrain
    # (a short full retrain with the default warm figure would otherwise price it higher).
    warm_hours = min(warm_hours, full_hours)
    full = _priced("full week", planned, full_hours, location)
    warm = _priced("warm week", planned, warm_hours, location)
    extra = _priced("refusal's full retrain", refusal, full_hours, location)
    refused = _sum("refused warm week", [(1.0, warm), (1.0, extra)])
    warm_off = not arguments.get("warm_start", True) or bool(arguments.get("tune", False))
    declared = None if trainer is None else trainer.declared
    said = trainer.says if trainer is not None else "the trainer's declaration is not read"
    if warm_off or every == 1:
        full_share = 1.0
        why = "warm_start is off or the week tunes" if warm_off else "full_retrain_every_weeks=1"
        assumption = f"every week retrains fully ({why}); the trainer must declare warm starts"
    elif declared is False:
        full_share = 1.0
        assumption = f"every week retrains fully: {said}"
    else:
        full_share = 1.0 / every if every else 0.0
        if not declared:
            said = (
                f"assumed, not read: {said}; a trainer that declares none retrains fully "
                "every week, as in the month of full retrains"
            )
        assumption = (
            (f"one full retrain every {every} weeks" if every else "no scheduled full retrain")
            + f", the other weeks warm-started ({said}); no refusal assumed: each adds the "
            "refused week's extra"
        )
    month = _sum(
        "typical month",
        [
            (WEEKS_PER_MONTH * full_share, full),
            (WEEKS_PER_MONTH * (1.0 - full_share), warm),
        ],
    )
    return WeekKinds(
        full=full,
        warm=warm,
        refused=refused,
        month=month,
        all_full_month=_sum("month of full retrains", [(WEEKS_PER_MONTH, full)]),
        full_weeks_per_month=round(WEEKS_PER_MONTH * full_share, 3),
        currency=currency,
        assumption=assumption,
        trainer_declares_warm_start=declared,
    )
