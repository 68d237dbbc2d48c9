"""Which kind of training a week gets: a warm start from the champion, or a full retrain.

A warm start continues the champion's model on the newest data (the trainer decides how: the
reference trainer replays a sample of older rows with the new weeks); a full retrain learns
from scratch on the whole window. The weekly template asks :func:`plan_training` once per run
and, when the gate refuses a warm-started candidate, retrains fully in the same run.

A trainer declares that it can warm start in its package's ``pyproject.toml``, with the flag
that takes the champion's model folder::

    [tool.vertex-retrain]
    warm-start-flag = "--warm_start_from"

The flag is passed only to a trainer that declares it, so a trainer that does not know of warm
starts never sees it. Each registered version records its kind and the week of the last full
retrain it descends from as labels (:data:`KIND_LABEL`, :data:`FULL_AS_OF_LABEL`), so the next
week knows when a full retrain is due without reading the history.

Pure: the standard library only.
"""

from __future__ import annotations

import datetime as dt
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "FULL",
    "FULL_AS_OF_LABEL",
    "FULL_RETRAIN_GROUP",
    "KIND_LABEL",
    "NO_TRAINING",
    "REFUSAL_RETRAIN_LABELS",
    "WARM",
    "TrainingPlan",
    "declared_flag",
    "plan_training",
]

WARM = "warm"
FULL = "full"
NO_TRAINING = "none"
"""A run's training kind when it stopped before any training finished (what was planned is
kept beside it)."""
KIND_LABEL = "training_kind"
"""Version label: ``warm`` or ``full``, how the version was trained."""
FULL_AS_OF_LABEL = "full_retrain_as_of"
"""Version label: the ``as_of`` week of the last full retrain in the version's line."""
FULL_RETRAIN_GROUP = "full-retrain"
"""The weekly template's condition group that retrains fully after the gate refused a
warm-started candidate."""
REFUSAL_RETRAIN_LABELS = {KIND_LABEL: FULL, "retrain_after": "refused_warm_start"}
"""Job labels of that retrain: the cost estimate prices it as the refusal's extra job, not as
every week's (and Vertex's billing shows it apart)."""
_TOOL_TABLE = "vertex-retrain"
_FLAG_KEY = "warm-start-flag"


@dataclass(frozen=True)
class TrainingPlan:
    """The week's training.

    Attributes:
        kind: ``warm`` or ``full``.
        reason: One sentence: why this kind.
        warm_start_args: The flag and the champion's model folder (``[--flag=URI]``) for a
            warm start; empty for a full retrain.
        labels: The version labels of a model trained as planned.
        full_labels: The version labels of a full retrain of this week (the retrain after a
            refused warm start).
    """

    kind: str
    reason: str
    warm_start_args: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    full_labels: dict[str, str] = field(default_factory=dict)


def declared_flag(pyproject_text: str | None) -> str:
    """The warm-start flag a trainer's ``pyproject.toml`` declares, ``""`` when none.

    Raises:
        ValueError: The declaration is not a flag (``--name``), naming the field and value.
    """
    if not pyproject_text:
        return ""
    try:
        document = tomllib.loads(pyproject_text)
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"pyproject.toml: not valid TOML ({error})") from None
    value = document.get("tool", {}).get(_TOOL_TABLE, {}).get(_FLAG_KEY, "")
    if value == "":
        return ""
    if not isinstance(value, str) or not value.startswith("--") or "=" in value or " " in value:
        raise ValueError(
            f"pyproject.toml: [tool.{_TOOL_TABLE}] {_FLAG_KEY} is {value!r}; expected a flag "
            "such as '--warm_start_from' (the trainer gets --flag=<champion model folder>)"
        )
    return value


def _weeks_between(earlier: str, later: dt.date) -> int | None:
    try:
        return (later - dt.date.fromisoformat(earlier)).days // 7
    except (TypeError, ValueError):
        return None


def plan_training(
    *,
    as_of: str,
    warm_start: bool,
    full_retrain_every_weeks: int,
    flag: str,
    champion_uri: str | None,
    champion_labels: Mapping[str, str] | None = None,
    tune: bool = False,
) -> TrainingPlan:
    """Decides the week's training kind.

    Args:
        as_of: The week (``YYYY-MM-DD``, the end of the run's data window).
        warm_start: The template's ``warm_start`` parameter.
        full_retrain_every_weeks: A full retrain is due when the champion's line was last
            fully retrained this many weeks before ``as_of`` or more (0: only when another
            reason calls for one; 1: every week).
        flag: The trainer's declared warm-start flag (``""``: it declares none).
        champion_uri: The champion's model folder, None without a champion.
        champion_labels: The champion version's labels.
        tune: Whether the week tunes hyperparameters (new ones do not fit the champion).

    Raises:
        ValueError: ``as_of`` is not a date, or ``full_retrain_every_weeks`` is negative.
    """
    week = dt.date.fromisoformat(as_of)
    if full_retrain_every_weeks < 0:
        raise ValueError(
            f"full_retrain_every_weeks must be >= 0 (0: no scheduled full retrain); "
            f"got {full_retrain_every_weeks}"
        )
    full_labels = {KIND_LABEL: FULL, FULL_AS_OF_LABEL: as_of}

    def full(reason: str) -> TrainingPlan:
        return TrainingPlan(FULL, reason, [], full_labels, full_labels)

    labels = dict(champion_labels or {})
    if not warm_start:
        return full("full retrain: warm_start is off")
    if not flag:
        return full(
            "full retrain: the trainer declares no warm start ([tool.vertex-retrain] "
            "warm-start-flag in its pyproject.toml)"
        )
    if tune:
        return full("full retrain: the week tunes hyperparameters, which the champion lacks")
    if champion_uri is None:
        return full("full retrain: there is no champion to start from")
    if full_retrain_every_weeks == 1:
        return full("full retrain: full_retrain_every_weeks is 1 (every week)")
    champion_as_of = labels.get("data_as_of", "")
    if champion_as_of and champion_as_of > as_of:
        return full(
            f"full retrain: the champion learned from data up to {champion_as_of}, after this "
            f"week ({as_of}): a replay starts afresh"
        )
    last_full = labels.get(FULL_AS_OF_LABEL, "")
    weeks = _weeks_between(last_full, week)
    if weeks is None:
        return full(
            f"full retrain: the champion records no last full retrain ({FULL_AS_OF_LABEL} label)"
        )
    if full_retrain_every_weeks and weeks >= full_retrain_every_weeks:
        return full(
            f"full retrain: due every {full_retrain_every_weeks} weeks, the last was "
            f"{weeks} weeks ago ({last_full})"
        )
    return TrainingPlan(
        WARM,
        f"warm start from the champion ({champion_uri}); last full retrain {weeks} weeks ago "
        f"({last_full})",
        [f"{flag}={champion_uri}"],
        {KIND_LABEL: WARM, FULL_AS_OF_LABEL: last_full},
        full_labels,
    )
