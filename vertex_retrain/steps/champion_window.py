"""Whether the champion can be judged on this run's gate period, from the data it trained on.

A registered version carries its data window as labels (``prepare_dataset``'s
``window_labels``): ``data_from`` (its first row's day), ``data_gate_from`` (the first day of
its own gate period: it saw nothing from that day on) and ``data_as_of`` (its window's end).
When this run's gate period overlaps the days the champion trained or selected on (a replay
of a past week, with a champion trained through later weeks), its score there is flattered:
the champion is not compared, and the decision rests on the floors and the references; and
a replay of a week before the end of the champion's data never replaces the champion (its
candidate learned from less recent data), unless a person forces it. A
version without window labels (registered by another pipeline) is compared as before, and the
summary says its window is unknown. Pure.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ChampionWindow", "champion_window"]

PERIOD_DAYS = {"day": 1, "week": 7}


@dataclass(frozen=True)
class ChampionWindow:
    """The verdict on a champion's window against the gate period.

    Attributes:
        comparable: Whether the champion may be scored and compared on the gate period.
        note: One sentence for the summary ("" when it is plainly comparable).
        keeps_champion: The run replays a week before the end of the champion's data: a
            candidate that learned from less recent data does not replace it (a person may,
            with ``force_decision``).
    """

    comparable: bool
    note: str = ""
    keeps_champion: bool = False


def _day(labels: Mapping[str, str], key: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(labels[key])
    except (KeyError, TypeError, ValueError):
        return None


def champion_window(labels: Mapping[str, str], manifest: Mapping[str, Any]) -> ChampionWindow:
    """Whether the champion with these labels may be judged on the manifest's gate period.

    Args:
        labels: The champion version's labels.
        manifest: This run's dataset manifest (its ``gate`` periods and ``period``).

    Raises:
        ValueError: The manifest has no gate period.
    """
    periods = sorted(manifest.get("gate", {}).get("periods", []))
    if not periods:
        raise ValueError(
            "the dataset manifest names no gate period; prepare it with prepare_dataset"
        )
    length = dt.timedelta(days=PERIOD_DAYS.get(str(manifest.get("period")), 1))
    gate_from = dt.date.fromisoformat(periods[0])
    gate_until = dt.date.fromisoformat(periods[-1]) + length
    seen_until = _day(labels, "data_gate_from") or _day(labels, "data_as_of")
    if seen_until is None:
        return ChampionWindow(
            True,
            "the champion's data window is not recorded (no data_gate_from or data_as_of "
            "label): compared on the gate period as is",
        )
    seen_from = _day(labels, "data_from") or dt.date.min
    first = seen_from.isoformat() if seen_from != dt.date.min else "?"
    shown = f"{first} to {(seen_until - dt.timedelta(days=1)).isoformat()}"
    gate = f"{gate_from.isoformat()} to {(gate_until - dt.timedelta(days=1)).isoformat()}"
    if gate_from < seen_until and gate_until > seen_from:
        note = (
            f"not comparable: the gate period ({gate}) lies in the champion's training window "
            f"({shown}), a replay; the champion is not judged on data it trained on, so the "
            "floors and the references decide"
        )
        newest = _day(labels, "data_as_of")
        if newest is not None and newest > gate_until:
            return ChampionWindow(
                False,
                note + f"; and the champion learned from data up to "
                f"{(newest - dt.timedelta(days=1)).isoformat()}, after this run's window, so "
                "the replay does not replace it (force_decision=better with a force_reason "
                "would)",
                keeps_champion=True,
            )
        return ChampionWindow(False, note)
    return ChampionWindow(True)
