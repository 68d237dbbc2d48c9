"""Typed builders for HyperparameterTuningJobs: parameters, conditions, metrics, trials."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from vertex_retrain.specs.custom_job import CustomJobSpec
from vertex_retrain.specs.machine_catalog import Catalog
from vertex_retrain.specs.problems import Problem, raise_or_warn
from vertex_retrain.specs.validate import validate_tuning_job

Scale = Literal["linear", "log", "reverse_log"]
_SCALES = {
    "linear": "UNIT_LINEAR_SCALE",
    "log": "UNIT_LOG_SCALE",
    "reverse_log": "UNIT_REVERSE_LOG_SCALE",
}
Algorithm = Literal["BAYESIAN", "GRID_SEARCH", "RANDOM_SEARCH"]


def _bounds(low: float | str, high: float | str) -> dict[str, Any]:
    # proto3 JSON omits zero values; omitting them keeps payloads identical to MessageToDict.
    pairs = (("minValue", low), ("maxValue", high))
    return {key: value for key, value in pairs if value not in (0.0, "0")}


@dataclass(frozen=True)
class Conditional:
    """A child parameter tried only when its parent takes one of ``parent_values``."""

    parent_values: tuple[Any, ...]
    parameter: Parameter


@dataclass(frozen=True)
class _Base:
    parameter_id: str
    children: tuple[Conditional, ...] = field(default=(), kw_only=True)

    def _value_spec(self) -> tuple[str, dict[str, Any]]:
        raise NotImplementedError

    def _parent_key(self) -> str:
        return "parentDiscreteValues"

    def _parent_values(self, values: tuple[Any, ...]) -> list[Any]:
        return [float(v) for v in values]

    def _scale(self) -> str | None:
        return None

    def to_payload(self) -> dict[str, Any]:
        """Returns the ``ParameterSpec`` JSON, conditional children included."""
        key, spec = self._value_spec()
        out: dict[str, Any] = {"parameterId": self.parameter_id, key: spec}
        if self._scale():
            out["scaleType"] = self._scale()
        if self.children:
            out["conditionalParameterSpecs"] = [
                {
                    self._parent_key(): {"values": self._parent_values(c.parent_values)},
                    "parameterSpec": c.parameter.to_payload(),
                }
                for c in self.children
            ]
        return out


@dataclass(frozen=True)
class DoubleParameter(_Base):
    """A continuous range ``[min_value, max_value]`` (not allowed with GRID_SEARCH)."""

    min_value: float
    max_value: float
    scale: Scale | None = None

    def _value_spec(self) -> tuple[str, dict[str, Any]]:
        return "doubleValueSpec", _bounds(float(self.min_value), float(self.max_value))

    def _scale(self) -> str | None:
        return _SCALES[self.scale] if self.scale else None


@dataclass(frozen=True)
class IntegerParameter(_Base):
    """An integer range ``[min_value, max_value]``."""

    min_value: int
    max_value: int
    scale: Scale | None = None

    def _value_spec(self) -> tuple[str, dict[str, Any]]:
        # int64 fields are strings in proto JSON.
        return "integerValueSpec", _bounds(str(int(self.min_value)), str(int(self.max_value)))

    def _scale(self) -> str | None:
        return _SCALES[self.scale] if self.scale else None

    def _parent_key(self) -> str:
        return "parentIntValues"

    def _parent_values(self, values: tuple[Any, ...]) -> list[Any]:
        return [str(int(v)) for v in values]


@dataclass(frozen=True)
class DiscreteParameter(_Base):
    """A set of numbers, in increasing order (e.g. batch sizes 32, 64, 128)."""

    values: tuple[float, ...]
    scale: Scale | None = None

    def _value_spec(self) -> tuple[str, dict[str, Any]]:
        return "discreteValueSpec", {"values": [float(v) for v in self.values]}

    def _scale(self) -> str | None:
        return _SCALES[self.scale] if self.scale else None


@dataclass(frozen=True)
class CategoricalParameter(_Base):
    """A set of strings (e.g. optimizer names)."""

    values: tuple[str, ...]

    def _value_spec(self) -> tuple[str, dict[str, Any]]:
        return "categoricalValueSpec", {"values": list(self.values)}

    def _parent_key(self) -> str:
        return "parentCategoricalValues"

    def _parent_values(self, values: tuple[Any, ...]) -> list[Any]:
        return [str(v) for v in values]


Parameter = DoubleParameter | IntegerParameter | DiscreteParameter | CategoricalParameter


@dataclass(frozen=True)
class Metric:
    """The metric a trial reports (cloudml-hypertune) and whether to maximize or minimize it."""

    metric_id: str
    goal: Literal["MAXIMIZE", "MINIMIZE"]


@dataclass(frozen=True)
class TuningJobSpec:
    """A HyperparameterTuningJob.

    Attributes:
        display_name: Job name.
        trial_job: The CustomJob each trial runs (its scheduling applies to every trial, so
            ``Scheduling(strategy="SPOT")`` runs the trials on Spot).
        metrics: Metrics with goals.
        parameters: Parameters to tune (with conditional children).
        max_trial_count: Trials in total.
        parallel_trial_count: Trials run at once (<= max_trial_count).
        max_failed_trial_count: Failures tolerated before the job fails (None: Vertex
            default).
        algorithm: ``BAYESIAN`` (default; omitted from the payload, which Vertex reads as
            Bayesian optimisation), ``GRID_SEARCH`` or ``RANDOM_SEARCH``.
        measurement_selection: ``LAST_MEASUREMENT`` or ``BEST_MEASUREMENT``.
        labels: Resource labels (the trial job's labels are merged in).
    """

    display_name: str
    trial_job: CustomJobSpec
    metrics: Sequence[Metric]
    parameters: Sequence[Parameter]
    max_trial_count: int
    parallel_trial_count: int
    max_failed_trial_count: int | None = None
    algorithm: Algorithm = "BAYESIAN"
    measurement_selection: Literal["LAST_MEASUREMENT", "BEST_MEASUREMENT"] | None = None
    labels: Mapping[str, str] = field(default_factory=dict)

    def unvalidated_payload(self) -> dict[str, Any]:
        """Returns the HyperparameterTuningJob resource without validating it."""
        study: dict[str, Any] = {
            "metrics": [{"metricId": m.metric_id, "goal": m.goal} for m in self.metrics],
            "parameters": [p.to_payload() for p in self.parameters],
        }
        if self.algorithm != "BAYESIAN":
            study["algorithm"] = self.algorithm
        if self.measurement_selection:
            study["measurementSelectionType"] = self.measurement_selection
        payload: dict[str, Any] = {
            "displayName": self.display_name,
            "studySpec": study,
            "maxTrialCount": int(self.max_trial_count),
            "parallelTrialCount": int(self.parallel_trial_count),
        }
        if self.max_failed_trial_count:
            payload["maxFailedTrialCount"] = int(self.max_failed_trial_count)
        payload["trialJobSpec"] = self.trial_job.job_spec_payload()
        labels = {**self.trial_job.all_labels(), **self.labels}
        if labels:
            payload["labels"] = labels
        return payload

    def validate(
        self, *, catalog: Catalog | None = None, today: _dt.date | None = None
    ) -> list[Problem]:
        """Returns every problem of this tuning job (errors and warnings)."""
        # The builder writes only real fields: the descriptor walk would find nothing.
        return self.trial_job.builder_problems() + validate_tuning_job(
            self.unvalidated_payload(), catalog=catalog, today=today, check_fields=False
        )

    def to_payload(
        self, *, catalog: Catalog | None = None, today: _dt.date | None = None
    ) -> dict[str, Any]:
        """Validates the tuning job and returns the resource (REST JSON, camelCase).

        Raises:
            JobSpecError: When the job is impossible (every error listed); warnings are
                emitted as :class:`~vertex_retrain.specs.problems.JobSpecWarning`.
        """
        raise_or_warn(self.validate(catalog=catalog, today=today))
        return self.unvalidated_payload()
