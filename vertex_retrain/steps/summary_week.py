"""The week's parts of the run summary: the Spot fallback's cost, the record, the notice,
and what the decision rested on.

``fallback_facts`` and ``notice_facts`` build the summary's entries; ``week_lines`` renders
them (and where the week was recorded) and ``evidence_lines`` the decision's evidence
(champion comparison, intervals, override) as Markdown lines for
:func:`vertex_retrain.steps.summary.render_markdown`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vertex_retrain.specs.cost import format_money


def fallback_facts(
    training: Mapping[str, Any],
    cost: Mapping[str, Any],
    *,
    tuning: Mapping[str, Any] | None = None,
) -> dict[str, Any] | None:
    """What a fallback from Spot to on-demand cost, against the Spot plan.

    Args:
        training: The training metrics (``spot_fallback``, ``spot_seconds``,
            ``on_demand_seconds``).
        cost: The summary's ``cost_on_vertex``: the Spot and on-demand price of
            ``assumed_training_hours`` of this job shape.
        tuning: The tuning study's metrics, the same keys; its trials share the training
            job's shape in the weekly pipeline, so its hours are priced at the same rates.

    Returns:
        Hours of Spot attempts and of on-demand work (training and tuning together; the
        tuning study's part also as ``tuning_spot_hours``/``tuning_on_demand_hours``), each
        priced at its rate, the on-demand premium (what those hours cost above Spot), the
        total and the Spot plan; None when neither step fell back.
    """
    steps = [s for s in (training, tuning or {}) if s.get("spot_fallback")]
    if not steps:
        return None
    spot_hours = sum(float(s.get("spot_seconds", 0.0)) for s in steps) / 3600
    on_demand_hours = sum(float(s.get("on_demand_seconds", 0.0)) for s in steps) / 3600
    facts: dict[str, Any] = {
        "spot_hours": round(spot_hours, 6),
        "on_demand_hours": round(on_demand_hours, 6),
    }
    if tuning and tuning.get("spot_fallback"):
        facts["tuning_spot_hours"] = round(float(tuning.get("spot_seconds", 0.0)) / 3600, 6)
        facts["tuning_on_demand_hours"] = round(
            float(tuning.get("on_demand_seconds", 0.0)) / 3600, 6
        )
    hours = cost.get("assumed_training_hours")
    spot, on_demand = cost.get("spot"), cost.get("on_demand")
    if not hours or spot is None or on_demand is None:
        return facts  # no prices for this shape: the hours alone
    spot_rate, on_demand_rate = float(spot) / float(hours), float(on_demand) / float(hours)
    facts.update(
        currency=cost.get("currency", ""),
        spot_attempts_cost=round(spot_rate * spot_hours, 6),
        on_demand_cost=round(on_demand_rate * on_demand_hours, 6),
        on_demand_premium=round((on_demand_rate - spot_rate) * on_demand_hours, 6),
        total_cost=round(spot_rate * spot_hours + on_demand_rate * on_demand_hours, 6),
        spot_plan=float(spot),
    )
    return facts


def interval_text(interval: Mapping[str, Any]) -> str:
    """``+0.0123 (95% interval +0.0040 to +0.0210)`` from an interval's JSON form."""
    return (
        f"{float(interval['point']):+.4f} ({float(interval['level']):.0%} interval "
        f"{float(interval['low']):+.4f} to {float(interval['high']):+.4f})"
    )


def evidence_lines(evidence: Mapping[str, Any]) -> list[str]:
    """The decision's evidence as Markdown lines: how the champion was judged, the
    intervals, and a forced decision with its reason."""
    lines: list[str] = []
    comparison = evidence.get("champion_comparison")
    if comparison:
        lines.append(f"**Champion:** {comparison}")
    for other, interval in sorted((evidence.get("intervals") or {}).items()):
        lines.append(f"**Candidate - {other}:** {interval_text(interval)}")
    override = evidence.get("override") or {}
    if override:
        lines.append(
            f"**Override:** forced to '{override.get('decision')}' because: "
            f"{override.get('reason')} (the rule said: {override.get('rule_said')})"
        )
    return [*lines, ""] if lines else []


def notice_facts(backend: str, recipients: Sequence[str]) -> dict[str, Any]:
    """Who hears of the run's end: Vertex e-mails the recipients; locally the summary is all."""
    return {"backend": backend, "recipients": [str(r) for r in recipients]}


def week_lines(facts: Mapping[str, Any]) -> list[str]:
    """The fallback, record and notice lines of the Markdown summary."""
    lines: list[str] = []
    fallback = facts.get("spot_fallback") or {}
    if fallback:
        line = (
            f"**Spot fallback:** Spot attempts {fallback['spot_hours']:.4f} h, then on demand "
            f"{fallback['on_demand_hours']:.4f} h"
        )
        if "tuning_on_demand_hours" in fallback:
            line += (
                f" (tuning: {fallback['tuning_spot_hours']:.4f} h Spot, "
                f"{fallback['tuning_on_demand_hours']:.4f} h on demand)"
            )
        if "total_cost" in fallback:
            money = fallback.get("currency", "")
            line += (
                f": {format_money(fallback['total_cost'], money)} in all, of which "
                f"{format_money(fallback['on_demand_premium'], money)} above Spot prices "
                f"(the Spot plan: {format_money(fallback['spot_plan'], money)})"
            )
        lines.append(line)
    if facts.get("recorded"):
        lines.append(f"**Recorded:** {facts['recorded']}")
    notice = facts.get("notice") or {}
    if notice and facts.get("state") != "SUCCEEDED":
        lines.append(_notice_line(notice))
    return lines


def _notice_line(notice: Mapping[str, Any]) -> str:
    recipients = ", ".join(notice.get("recipients") or [])
    if notice.get("backend") == "vertex":
        who = (
            f"Vertex AI e-mails {recipients}"
            if recipients
            else "no one (notification_emails is empty)"
        )
        return f"**Failure notice:** {who}"
    where = f"; on Vertex it is e-mailed to {recipients}" if recipients else ""
    return (
        "**Failure notice:** this summary and the run's non-zero exit code (local runs send "
        f"no e-mail{where})"
    )
