"""The run summary the exit handler writes: window, data gate, decision, metrics, goodput, cost,
Spot fallback, registry state and the failure notice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vertex_retrain.compiled_dags import numbered_tasks
from vertex_retrain.rules.aliases import CHAMPION_ALIAS
from vertex_retrain.rules.same_model import is_same_model
from vertex_retrain.rules.warm_start import FULL, NO_TRAINING, WARM
from vertex_retrain.specs import JobSpecError
from vertex_retrain.specs.bigquery_cost import bigquery_query_cost, warehouse_line
from vertex_retrain.specs.cost import format_money
from vertex_retrain.specs.defaults import TRAINING
from vertex_retrain.specs.prices import load_prices
from vertex_retrain.steps.run_outputs import TaskOutputs, read_task_outputs
from vertex_retrain.steps.summary_registration import registration_lines
from vertex_retrain.steps.summary_week import (
    evidence_lines,
    fallback_facts,
    notice_facts,
    week_lines,
)
from vertex_retrain.steps.training_cost import estimate_training_cost, request_for_shape

DECISION_KEYS = ("is_better", "reason", "rule", "candidate_score", "champion_score", "evidence")
"""The evaluate step's outputs that make up a week's decision (the summary's and the report's)."""


def _ran_named(outputs: Mapping[str, TaskOutputs], prefix: str) -> list[tuple[str, TaskOutputs]]:
    """The tasks named ``prefix`` or ``prefix-N`` (If/Else branches, a retrain after a
    refusal) that ran, with their names, in the pipeline's order (``prefix``, ``prefix-2``...)."""
    names = numbered_tasks(outputs, prefix)
    return [(n, outputs[n]) for n in names if outputs[n].parameters or outputs[n].artifacts]


def _ran(outputs: Mapping[str, TaskOutputs], prefix: str) -> list[TaskOutputs]:
    """The outputs of the tasks :func:`_ran_named` finds."""
    return [task for _, task in _ran_named(outputs, prefix)]


def _paid_training_hours(
    outputs: Mapping[str, TaskOutputs], planned: str, full_hours: float, warm_hours: float
) -> tuple[float, list[str]]:
    """The training hours this run paid for, and the training tasks it reused from the cache.

    A reused task (the backend's cache: Vertex's or the local one) spent nothing in this run,
    so its hours are left out. When the week was planned warm, the first training is the warm
    start and any later one the full retrain after a refusal; otherwise each is a full one.
    """
    hours = 0.0
    reused = []
    for position, (name, task) in enumerate(_ran_named(outputs, "train-custom-job")):
        if task.cached:
            reused.append(name)
            continue
        hours += warm_hours if planned == WARM and position == 0 else full_hours
    return hours, reused


def _first(outputs: Mapping[str, TaskOutputs], prefix: str) -> TaskOutputs | None:
    """The first task named ``prefix`` or ``prefix-N`` that ran."""
    ran = _ran(outputs, prefix)
    return ran[0] if ran else None


def _last(outputs: Mapping[str, TaskOutputs], prefix: str) -> TaskOutputs | None:
    """The last task named ``prefix`` or ``prefix-N`` that ran: after a refused warm start,
    the full retrain's (its decision, model and registration are the week's)."""
    ran = _ran(outputs, prefix)
    return ran[-1] if ran else None


def training_kind_facts(outputs: Mapping[str, TaskOutputs]) -> dict[str, Any] | None:
    """Which kind of training the week ran and why (``plan_training``'s outputs); after the
    gate refused a warm-started candidate, the full retrain that followed, with the refusal.

    Returns:
        ``kind`` (``warm``/``full``/``warm+full``; ``none`` when the run stopped before any
        training finished), ``reason``, ``planned``, and after a refusal ``warm_attempt``
        (the warm candidate's decision and model); None without a plan.
    """
    plan = _first(outputs, "plan-training")
    if plan is None:
        return None
    kind = str(plan.parameters.get("kind", ""))
    facts: dict[str, Any] = {
        "kind": kind,
        "planned": kind,
        "reason": str(plan.parameters.get("reason", "")),
    }
    trainings = _ran(outputs, "train-custom-job")
    if not trainings:  # a failed week must not read as a week that trained
        facts["kind"] = NO_TRAINING
        facts["reason"] = f"no training finished (planned: {facts['reason'] or kind})"
        return facts
    evaluations = _ran(outputs, "evaluate-model")
    if kind == WARM and len(trainings) > 1 and evaluations:
        refused = evaluations[0].parameters
        facts["kind"] = f"{WARM}+{FULL}"
        facts["reason"] = (
            f"full retrain in the same run: the gate refused the warm-started candidate "
            f"({refused.get('reason')})"
        )
        facts["warm_attempt"] = {
            "reason": str(plan.parameters.get("reason", "")),
            "decision": refused.get("reason"),
            "candidate_score": refused.get("candidate_score"),
            "model_uri": trainings[0].artifacts.get("model", {}).get("uri"),
        }
    return facts


def build_summary(
    outputs: Mapping[str, TaskOutputs],
    *,
    run_name: str,
    state: str,
    error_message: str,
    job_shape: Mapping[str, Any],
    expected_training_hours: float,
    backend: str = "",
    notification_emails: Sequence[str] = (),
    expected_warm_training_hours: float | None = None,
    location: str = "",
) -> dict[str, Any]:
    """Assembles the summary from the tasks' outputs (pure; missing tasks are left out).

    The cost assumes ``expected_training_hours`` for a full retrain and
    ``expected_warm_training_hours`` (default: the same) for a warm start; both after a
    refused warm start; at the prices of ``location`` where the price book holds that region
    (a run on Vertex), else of the book's default region.
    """
    facts: dict[str, Any] = {"pipeline_run": run_name, "state": state}
    if error_message:
        facts["error"] = error_message
    facts.update(_data_facts(outputs))
    evaluation = _last(outputs, "evaluate-model")
    if evaluation is not None:
        facts["decision"] = {key: evaluation.parameters.get(key) for key in DECISION_KEYS}
        facts["metrics"] = evaluation.artifacts.get("metrics", {}).get("metadata", {})
    training = _last(outputs, "train-custom-job")
    if training is not None:
        facts["training"] = {
            "model_uri": training.artifacts.get("model", {}).get("uri"),
            **training.artifacts.get("metrics", {}).get("metadata", {}),
        }
    registered = _last(outputs, "register-model")
    if registered is not None:
        facts["registered"] = dict(registered.parameters)
    deployment = _last(outputs, "deploy-model")
    if deployment is not None:
        facts["deployment"] = {
            **deployment.parameters,
            # Where a rollback command points (local or Vertex endpoint resource name).
            "endpoint": deployment.artifacts.get("endpoint", {})
            .get("metadata", {})
            .get("resourceName", ""),
        }
    elif registered is not None and state != "SUCCEEDED":
        aliases = registered.parameters.get("aliases") or []
        if CHAMPION_ALIAS in aliases:
            # Promoted, then stopped before its deploy: traffic is on the previous champion.
            facts["champion_not_deployed"] = str(registered.parameters.get("version_id", ""))
    tuning = _first(outputs, "hp-tune")
    if tuning is not None:
        facts["tuning"] = dict(tuning.artifacts.get("metrics", {}).get("metadata", {}))
    kind = training_kind_facts(outputs)
    if kind is not None:
        facts["training_kind"] = kind
    warm = expected_training_hours
    if expected_warm_training_hours is not None:
        # Never above a full retrain, as the estimate prices it.
        warm = min(expected_warm_training_hours, expected_training_hours)
    planned = kind["planned"] if kind is not None else FULL
    if _ran(outputs, "train-custom-job"):
        hours, reused = _paid_training_hours(outputs, planned, expected_training_hours, warm)
    else:  # no training output (a failed run): the week's planned training, as assumed
        hours, reused = (warm if planned == WARM else expected_training_hours), []
    facts["cost_on_vertex"] = _cost(job_shape, hours, location)
    if reused:
        facts["cost_on_vertex"]["reused_from_cache"] = reused
    fallback = fallback_facts(
        facts.get("training") or {}, facts["cost_on_vertex"], tuning=facts.get("tuning") or {}
    )
    if fallback is not None:
        facts["spot_fallback"] = fallback
    if backend:
        facts["notice"] = notice_facts(backend, notification_emails)
    return facts


def _data_facts(outputs: Mapping[str, TaskOutputs]) -> dict[str, Any]:
    """The run's data window (data_window, prepare_dataset), its extraction from a warehouse
    (extract_window: digest, bytes billed and their price) and data gate (check_data)."""
    facts: dict[str, Any] = {}
    window = _first(outputs, "data-window")
    prepared = _first(outputs, "prepare-dataset")
    if window is not None or prepared is not None:
        facts["data_window"] = {
            **(dict(window.parameters) if window is not None else {}),
            **(prepared.artifacts.get("dataset", {}).get("metadata", {}) if prepared else {}),
        }
    extracted = _first(outputs, "extract-window")
    if extracted is not None and extracted.parameters.get("digest"):
        facts["warehouse"] = {
            key: extracted.parameters.get(key)
            for key in ("digest", "rows", "bytes_scanned", "bytes_billed", "data_uri")
        }
        facts["warehouse"]["cost_usd"] = bigquery_query_cost(
            int(extracted.parameters.get("bytes_billed") or 0)
        )
    gate = _first(outputs, "check-data")
    if gate is not None:
        facts["data_gate"] = {
            **{key: gate.parameters.get(key) for key in ("passed", "verdict", "breaches")},
            "statistics": gate.artifacts.get("statistics", {}).get("metadata", {}),
        }
    return facts


def _cost(job_shape: Mapping[str, Any], hours: float, location: str = "") -> dict[str, Any]:
    # Vertex's prices of the region the run was in; a local run's (``local``) or a region the
    # price book does not hold: the book's default region, which the line names.
    book = load_prices()
    where = location if location in book.locations() else None
    # An impossible shape is often why the run failed; the summary says so instead of failing.
    try:
        request = request_for_shape(job_shape)
        estimate = estimate_training_cost(request, hours, location=where, prices=book)
    except JobSpecError as error:
        return {"unavailable": str(error), "job_shape": dict(job_shape)}
    return {
        "assumed_training_hours": hours,
        # Which of the two prices the job pays: Spot's, or on-demand's for STANDARD and
        # FLEX_START (whose own discount is not in the price book).
        "scheduling_strategy": request.scheduling_strategy,
        "gpu_hours": estimate.gpu_hours,
        "on_demand": estimate.on_demand_cost,
        "spot": estimate.spot_cost,
        "currency": estimate.currency,
        "job_shape": dict(job_shape),
        "notes": list(estimate.notes),
        # Each line's unit prices with their labels (quoted / derived / unknown) and sources.
        "location": estimate.location,
        "prices": [line.to_dict() for line in estimate.lines],
    }


def summarize_run(
    *,
    backend: str,
    pipeline_root: str,
    run_name: str,
    state: str,
    error_message: str,
    job_shape: Mapping[str, Any],
    expected_training_hours: float = TRAINING.expected_training_hours,
    project: str = "",
    location: str = "",
    notification_emails: Sequence[str] = (),
    expected_warm_training_hours: float | None = None,
) -> dict[str, Any]:
    """Reads the run's task outputs and builds its summary.

    A failure to read the outputs is recorded in the summary rather than raised: the exit
    handler must still write what it knows.
    """
    try:
        outputs = read_task_outputs(
            backend=backend,
            pipeline_root=pipeline_root,
            run_name=run_name,
            project=project,
            location=location,
        )
        unreadable = ""
    except Exception as error:  # the summary must survive a missing or odd run record
        outputs, unreadable = {}, f"{type(error).__name__}: {error}"
    facts = build_summary(
        outputs,
        run_name=run_name,
        state=state,
        error_message=error_message,
        job_shape=job_shape,
        expected_training_hours=expected_training_hours,
        backend=backend,
        notification_emails=notification_emails,
        expected_warm_training_hours=expected_warm_training_hours,
        location=location,
    )
    if unreadable:
        facts["outputs_unreadable"] = unreadable
    return facts


def decision_verdict(decision: Mapping[str, Any]) -> str:
    """The decision in a few words: ``new champion``, ``challenger only``, or ``champion
    unchanged`` when the candidate was the champion itself (a re-run of its week)."""
    if is_same_model((decision.get("evidence") or {}).get("champion_comparison")):
        return "champion unchanged"
    return "new champion" if decision.get("is_better") else "challenger only"


def render_markdown(facts: Mapping[str, Any]) -> str:
    """The summary as Markdown for the pipeline UI."""
    lines = [f"# Run {facts.get('pipeline_run', '?')}: {facts.get('state', '?')}", ""]
    if "error" in facts:
        lines += [f"**Error:** {facts['error']}", ""]
    window = facts.get("data_window") or {}
    if window.get("as_of"):
        span = f": {window['first_row']} .. {window['last_row']}" if window.get("last_row") else ""
        source = f" ({window['source']})" if window.get("source") else ""
        lines += [f"**Data window:** rows before {window['as_of']}{source}{span}", ""]
    gate = facts.get("data_gate") or {}
    if gate.get("verdict"):
        lines += [f"**Data gate:** {gate['verdict']}", ""]
    decision = facts.get("decision")
    if decision:
        verdict = decision_verdict(decision)
        lines += [f"**Decision:** {verdict}: {decision.get('reason')}", ""]
        lines += evidence_lines(decision.get("evidence") or {})
    metrics = facts.get("metrics") or {}
    if metrics:
        lines += ["| metric | value |", "| --- | --- |"]
        lines += [
            f"| {name} | {value:.4f} |"
            for name, value in sorted(metrics.items())
            if isinstance(value, int | float)
        ]
        lines.append("")
    kind = facts.get("training_kind") or {}
    if kind:
        lines += [f"**Training kind:** {kind.get('kind')}: {kind.get('reason')}", ""]
    training = facts.get("training") or {}
    if training:
        # Unknown stays unknown: Vertex records neither step progress nor restarts.
        goodput = training.get("goodput")
        restarts = training.get("restarts")
        lines.append(
            "**Training:** goodput "
            + (f"{goodput:.3f}" if isinstance(goodput, int | float) else "unknown")
            + ", restarts "
            + (f"{int(restarts)}" if isinstance(restarts, int | float) else "unknown")
            + ("" if isinstance(goodput, int | float) else " (the job records no step progress)")
        )
    lines += registration_lines(facts)
    lines += _cost_lines(facts)
    if facts.get("warehouse"):
        lines.append(f"**Warehouse:** {warehouse_line(facts['warehouse'])}")
    lines += week_lines(facts)
    return "\n".join(lines) + "\n"


def _cost_lines(facts: Mapping[str, Any]) -> list[str]:
    """The training's price on Vertex; none for a run in which no training finished (stopped
    by the data gate, failed before or during training), as ``history`` and the local run's
    report count it, with the price of the week as planned beside it."""
    cost = facts.get("cost_on_vertex") or {}
    if not cost:
        return []
    if "unavailable" in cost:
        return [f"**Cost on Vertex:** unavailable: {cost['unavailable']}"]
    currency = cost.get("currency", "")
    prices = (
        f"on-demand {format_money(cost.get('on_demand'), currency)}, "
        f"Spot {format_money(cost.get('spot'), currency)}"
    )
    hours = f"{cost['assumed_training_hours']:g} h of training"
    if "training" not in facts:
        return [
            f"**Cost on Vertex:** none counted: no training finished in this run (the week "
            f"as planned, {hours}: {prices})"
        ]
    return [
        f"**Cost on Vertex** ({hours} assumed): {prices}"
        + _reused_note(cost.get("reused_from_cache") or [])
    ]


def _reused_note(reused: Sequence[str]) -> str:
    if not reused:
        return ""
    return f"; not counted: {', '.join(reused)} reused an earlier run's outputs (cache)"
