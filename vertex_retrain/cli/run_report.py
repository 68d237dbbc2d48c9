"""The end of a local run: where everything is, what was registered and deployed, how to serve.

Read from the run's own record (kfp.local's ``<pipeline root>/<run>/<task>/executor_output.json``)
so it works for every pipeline, with or without a summary step. The same facts print as a
table (no dict reprs) or, with ``--json``, as JSON.
"""

from __future__ import annotations

import json
import shutil
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from rich.table import Table

from vertex_retrain.cli.console import cell_text, print_renderable
from vertex_retrain.cli.local_run import endpoint_of
from vertex_retrain.cli.run_progress import format_duration
from vertex_retrain.compiled_dags import numbered_tasks
from vertex_retrain.invocation import command
from vertex_retrain.rules.aliases import CHAMPION_ALIAS
from vertex_retrain.rules.traffic import traffic_text
from vertex_retrain.steps.summary import DECISION_KEYS
from vertex_retrain.steps.summary_registration import local_rollback_command, local_rollback_text

SERVE_PORT = 8080
"""``vertex-retrain serve``'s default port, for the URL the report gives."""

TUNING_REPORT_NAME = "tuning-report.html"
_SHOWN_METRICS = 3
"""Metrics on the report's line: the primary one first, then the others by name."""


@dataclass
class LocalRunReport:
    """What a local run did and where to look (see module doc)."""

    pipeline: str
    succeeded: bool
    wall_seconds: float
    log_path: Path
    pipeline_root: Path | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    decision: dict[str, Any] = field(default_factory=dict)
    model: dict[str, Any] = field(default_factory=dict)
    endpoint: dict[str, Any] = field(default_factory=dict)
    tuning_report: Path | None = None
    cost: dict[str, Any] = field(default_factory=dict)
    training: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The report as JSON-ready data (``run --json``)."""
        return {
            "pipeline": self.pipeline,
            "state": "SUCCEEDED" if self.succeeded else "FAILED",
            "wall_seconds": round(self.wall_seconds, 1),
            "log": str(self.log_path),
            "pipeline_root": str(self.pipeline_root) if self.pipeline_root else None,
            "metrics": self.metrics,
            "decision": self.decision,
            "model": self.model,
            "endpoint": self.endpoint,
            "tuning_report": str(self.tuning_report) if self.tuning_report else None,
            "cost_on_vertex": self.cost,
            "training_kind": self.training,
            "errors": self.errors,
        }

    def render(self, out: TextIO) -> None:
        """Prints the report as a two-column table."""
        state = "succeeded" if self.succeeded else "FAILED"
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column(overflow="fold")
        table.add_row("pipeline root", str(self.pipeline_root or "-"))
        table.add_row("log", str(self.log_path))
        if self.training:
            table.add_row("training", f"{self.training.get('kind')}: {self.training.get('reason')}")
        if self.metrics:
            table.add_row("metrics", metrics_line(self.metrics, self.decision))
        if self.decision:
            table.add_row("evaluation", self._evaluation_line())
        if self.model:
            table.add_row(
                "model",
                f"{self.model['display_name']} version {self.model['version']} (aliases "
                f"{cell_text(self.model.get('aliases'))})",
            )
        if self.tuning_report:
            table.add_row("tuning report", str(self.tuning_report))
        if self.endpoint:
            # The deployed model this run made serves the version it registered.
            deployed, version = self.endpoint.get("deployed_model_id"), self.model.get("version")
            versions = {str(deployed): str(version)} if deployed and version else {}
            split = traffic_text(self.endpoint.get("traffic", {}), versions)
            table.add_row("endpoint", f"{self.endpoint['display_name']}: {split or 'no traffic'}")
            # The run stops its model servers when it ends: a URL now would answer nothing.
            table.add_row("model servers", "stopped with this run")
            serve = self.endpoint["serve_command"]
            table.add_row("serve again", f"{serve}, then POST to {self.endpoint['url']}")
            rollback = local_rollback_text(self.endpoint, self.endpoint["display_name"])
            if rollback:
                table.add_row("roll back", rollback)
        if self.cost:
            table.add_row("cost on Vertex", _cost_line(self.cost))
        for error in self.errors:
            table.add_row("error", error)
        out.write(f"run {self.pipeline} {state} in {format_duration(self.wall_seconds)}\n")
        # Never wrapped by us, on a terminal too: paths stay whole for copy and paste (a
        # terminal's own soft wrap copies as one line; a wrapped cell would not).
        print_renderable(out, table, wide=True)

    def _evaluation_line(self) -> str:
        """The decision, and for a better candidate the pipeline did not promote, why not; a
        candidate that was the champion itself (nothing to decide) is its reason alone."""
        from vertex_retrain.rules.same_model import is_same_model
        from vertex_retrain.steps.decision import NO_CHAMPION_SCORE

        evidence = self.decision.get("evidence") or {}
        if is_same_model(evidence.get("champion_comparison")):
            return cell_text(self.decision.get("reason"))
        better = bool(self.decision.get("is_better"))
        none_yet = self.decision.get("champion_score") == NO_CHAMPION_SCORE
        if not (better and self.model and self.model.get("promoted") is False):
            if none_yet:  # nothing to be better than: the rule said whether it may lead
                verdict = "promoted" if better else "not promoted"
            else:
                verdict = "better than the champion" if better else "not better than the champion"
            return f"{verdict}: {cell_text(self.decision.get('reason'))}"
        # The rule's reason ("becomes the first champion") assumes a promotion that a
        # pipeline registering challengers only (train-only) never makes.
        return (
            f"{'no champion yet' if none_yet else 'better than the champion'}; registered as "
            f"challenger: {self.pipeline} never promotes"
        )


def metrics_line(metrics: Mapping[str, float], decision: Mapping[str, Any]) -> str:
    """``rmse 11.2000 (champion 11.6000, seasonal_naive 13.0000); mae ...``.

    The rule's primary metric comes first, then its other declared metrics; a reference is
    shown when it is the declared one, or when none is declared.
    """
    from vertex_retrain.run_record import metrics_by_role

    candidate, champion, references = metrics_by_role(metrics)
    rule = decision.get("rule") or {}
    primary = str(rule.get("primary") or "")
    declared = str(rule.get("reference") or "")
    shown_references = {declared: references[declared]} if declared in references else references
    names = list(dict.fromkeys([primary, *(rule.get("metrics") or {}), *sorted(candidate)]))
    parts = []
    for name in [n for n in names if n in candidate][:_SHOWN_METRICS]:
        others = [f"champion {champion[name]:.4f}"] if name in champion else []
        others += [
            f"{ref} {values[name]:.4f}"
            for ref, values in sorted(shown_references.items())
            if name in values
        ]
        parts.append(
            f"{name} {candidate[name]:.4f}" + (f" ({', '.join(others)})" if others else "")
        )
    return "; ".join(parts) or ", ".join(f"{k} {v:.4g}" for k, v in sorted(metrics.items())[:4])


def _cost_line(cost: Mapping[str, Any]) -> str:
    from vertex_retrain.specs.cost import format_money

    if "unavailable" in cost:
        return f"unavailable: {cost['unavailable']}"
    currency = cost.get("currency", "")
    return (
        f"on-demand {format_money(cost.get('on_demand'), currency)}, Spot "
        f"{format_money(cost.get('spot'), currency)}"
        # Prices differ by region: say whose (the pipeline's location, else the price book's).
        + (f" in {cost['location']}" if cost.get("location") else "")
        + f" ({cost.get('assumed_training_hours', 0):g} h of training assumed)"
    )


def _task_outputs(run_dir: Path, prefix: str) -> dict[str, Any] | None:
    """The executor output of the last task ``prefix`` (or ``prefix-N`` in a branch) that ran:
    after a refused warm start, the full retrain's decision and registration are the week's."""
    for name in reversed(numbered_tasks((f.name for f in run_dir.iterdir() if f.is_dir()), prefix)):
        try:
            loaded: dict[str, Any] = json.loads(
                (run_dir / name / "executor_output.json").read_text(encoding="utf-8")
            )
        except (OSError, ValueError):
            continue
        return loaded
    return None


def _artifact_metadata(outputs: Mapping[str, Any], name: str) -> dict[str, Any]:
    artifacts = outputs.get("artifacts", {}).get(name, {}).get("artifacts", [])
    metadata = artifacts[0].get("metadata", {}) if artifacts else {}
    return dict(metadata) if isinstance(metadata, Mapping) else {}


def endpoint_url(endpoint: str, port: int = SERVE_PORT) -> str:
    """The predict URL ``vertex-retrain serve ENDPOINT`` answers on by default."""
    return f"http://127.0.0.1:{port}/v1/endpoints/{urllib.parse.quote(endpoint)}:predict"


def build_report(
    pipeline: str,
    *,
    succeeded: bool,
    wall_seconds: float,
    log_path: Path,
    run_dir: Path | None,
    arguments: Mapping[str, Any],
    summary: Mapping[str, Any] | None,
    errors: list[str] | None = None,
) -> LocalRunReport:
    """Gathers the report from the run folder, the run's arguments and its summary, if any.

    The tuning study's HTML report (a KFP ``HTML`` artifact, a file without an extension) is
    copied next to the run as ``tuning-report.html`` so a browser opens it.
    """
    report = LocalRunReport(pipeline, succeeded, wall_seconds, log_path, run_dir)
    report.errors = list(errors or [])
    if summary and "training" in summary:
        # As in history: a run that trained nothing (stopped by the data gate, failed before
        # training) is not shown a training cost it never paid.
        report.cost = dict(summary.get("cost_on_vertex") or {})
    if summary and summary.get("training_kind"):
        # Which kind of training the week ran (warm, full, warm then full) and why.
        report.training = dict(summary["training_kind"])
    if run_dir is None:
        return report
    evaluation = _task_outputs(run_dir, "evaluate-model")
    if evaluation is not None:
        report.metrics = {
            key: value
            for key, value in _artifact_metadata(evaluation, "metrics").items()
            if isinstance(value, int | float) and not isinstance(value, bool)
        }
        parameters = evaluation.get("parameterValues", {})
        report.decision = {key: parameters[key] for key in DECISION_KEYS if key in parameters}
    registered = _task_outputs(run_dir, "register-model")
    if registered is not None:
        parameters = registered.get("parameterValues", {})
        resource = str(_artifact_metadata(registered, "vertex_model").get("resourceName", ""))
        name = arguments.get("model_display_name") or resource.split("/")[-1].split("@")[0]
        aliases = list(parameters.get("aliases") or [])
        report.model = {
            "display_name": name,
            "version": parameters.get("version_id"),
            "aliases": aliases,
            "promoted": str(arguments.get("champion_alias") or CHAMPION_ALIAS) in aliases,
        }
    deployed = _task_outputs(run_dir, "deploy-model")
    endpoint = endpoint_of(arguments)
    if deployed is not None and endpoint:
        parameters = deployed.get("parameterValues", {})
        report.endpoint = {
            "display_name": endpoint,
            "deployed_model_id": parameters.get("deployed_model_id"),
            "traffic": dict(parameters.get("traffic") or {}),
            "previous_traffic": dict(parameters.get("previous_traffic") or {}),
            "rollback_command": local_rollback_command(endpoint),
            "url": endpoint_url(endpoint),
            "serve_command": command("serve", endpoint),
        }
    html = sorted(run_dir.glob("hp-tune*/trials_report"))
    if html:
        report.tuning_report = run_dir / TUNING_REPORT_NAME
        shutil.copyfile(html[0], report.tuning_report)
    return report
