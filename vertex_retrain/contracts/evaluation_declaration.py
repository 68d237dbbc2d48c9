"""The evaluation declaration: which metrics decide, in which direction, and by how much.

A team declares how its candidate is judged once, as a JSON or YAML object, and passes it to
``evaluate_model`` (the pipelines' ``evaluation_declaration`` parameter)::

    primary: rmse                   # the metric the decision is made on
    metrics: {rmse: lower, mae: lower, coverage: higher}   # every metric named below
    min_improvement: 0.0            # the primary metric must improve by more than this
    guardrails: {mae: 0.5}          # largest allowed worsening of another metric
    floors: {rmse: 40.0}            # what the candidate must reach, champion or not
    reference: seasonal_naive       # optional: the candidate must beat this reference

Improvement and worsening are measured in each metric's direction: for a ``lower`` metric an
RMSE going from 12 to 11 improves it by 1. A floor is a minimum for a ``higher`` metric and a
maximum for a ``lower`` one. ``reference`` names one of the references the evaluation entry
point writes in its metrics file (:mod:`.evaluation`); the candidate must beat it on the
primary metric before it can become the champion, the first one included. This module is
pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from vertex_retrain.contracts.shown import shown

__all__ = [
    "DIRECTIONS",
    "EvaluationDeclaration",
    "EvaluationDeclarationError",
    "load_evaluation_declaration",
    "parse_evaluation_declaration",
]

DIRECTIONS = ("higher", "lower")
"""Which way a metric improves."""

_KEYS = ("primary", "metrics", "min_improvement", "guardrails", "floors", "reference")


class EvaluationDeclarationError(ValueError):
    """The declaration is malformed; the message names the field, the value and what works."""


@dataclass(frozen=True)
class EvaluationDeclaration:
    """A validated evaluation declaration (see the module docstring).

    Attributes:
        primary: The metric the decision is made on.
        directions: Metric -> ``higher`` or ``lower`` (every metric named here).
        min_improvement: The primary metric must improve by more than this.
        guardrails: Metric -> largest allowed worsening (>= 0).
        floors: Metric -> the bound the candidate must reach.
        reference: The reference the candidate must beat on the primary metric, or None.
    """

    primary: str
    directions: dict[str, str]
    min_improvement: float = 0.0
    guardrails: dict[str, float] = field(default_factory=dict)
    floors: dict[str, float] = field(default_factory=dict)
    reference: str | None = None

    def gain(self, metric: str, new: float, old: float) -> float:
        """How much ``new`` improves on ``old`` in ``metric``'s direction (negative: worse)."""
        return new - old if self.directions[metric] == "higher" else old - new

    def reaches(self, metric: str, value: float, floor: float) -> bool:
        """Whether ``value`` reaches ``floor`` (at least for higher, at most for lower)."""
        return value >= floor if self.directions[metric] == "higher" else value <= floor

    def to_dict(self) -> dict[str, Any]:
        """The declaration as the JSON object it parses from."""
        out: dict[str, Any] = {
            "primary": self.primary,
            "metrics": dict(self.directions),
            "min_improvement": self.min_improvement,
            "guardrails": dict(self.guardrails),
            "floors": dict(self.floors),
        }
        if self.reference:
            out["reference"] = self.reference
        return out


def _fail(path: str, value: Any, expected: str) -> NoReturn:
    raise EvaluationDeclarationError(
        f"evaluation declaration: {path} is {shown(value)}; expected {expected} "
        "(docs/components.md#evaluation-declaration)"
    )


def _number(value: Any, path: str, *, at_least: float | None = None) -> float:
    # bool is an int subclass; True as a threshold is a mistake, not a 1.
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        _fail(path, value, "a finite number")
    if at_least is not None and value < at_least:
        _fail(path, value, f"a number >= {at_least:g}")
    return float(value)


def _per_metric(
    value: Any, path: str, directions: Mapping[str, str], *, at_least: float | None = None
) -> dict[str, float]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        _fail(path, value, "an object of metric name -> number")
    out = {}
    for name, number in value.items():
        if name not in directions:
            _fail(
                f"{path}.{name}", name, f"a metric declared under metrics: {', '.join(directions)}"
            )
        out[str(name)] = _number(number, f"{path}.{name}", at_least=at_least)
    return out


def parse_evaluation_declaration(value: Any) -> EvaluationDeclaration:
    """Validates a decoded declaration (see the module docstring).

    Raises:
        EvaluationDeclarationError: The first problem found, naming the field, its value
            and what is expected.
    """
    if not isinstance(value, Mapping) or not value:
        _fail(
            "the declaration",
            value,
            "an object with primary and metrics (and optionally min_improvement, guardrails, "
            "floors, reference); pass --param evaluation_declaration=@evaluation.yaml",
        )
    unknown = sorted(str(key) for key in value if key not in (*_KEYS, "format"))
    if unknown:
        _fail(unknown[0], value[unknown[0]], f"one of the keys {', '.join(_KEYS)}")
    metrics = value.get("metrics")
    if not isinstance(metrics, Mapping) or not metrics:
        _fail("metrics", metrics, "an object of metric name -> 'higher' or 'lower'")
    directions: dict[str, str] = {}
    for name, direction in metrics.items():
        if not isinstance(name, str) or not name.strip():
            _fail("metrics key", name, "a non-empty metric name")
        if direction not in DIRECTIONS:
            _fail(f"metrics.{name}", direction, "'higher' or 'lower' (which way it improves)")
        directions[name] = direction
    primary = value.get("primary")
    if primary not in directions:
        _fail("primary", primary, f"a metric declared under metrics: {', '.join(directions)}")
    reference = value.get("reference")
    if reference is not None and (not isinstance(reference, str) or not reference.strip()):
        _fail("reference", reference, "the name of a reference the metrics file reports")
    return EvaluationDeclaration(
        primary=primary,
        directions=directions,
        min_improvement=_number(value.get("min_improvement", 0.0), "min_improvement"),
        guardrails=_per_metric(value.get("guardrails"), "guardrails", directions, at_least=0.0),
        floors=_per_metric(value.get("floors"), "floors", directions),
        reference=reference or None,
    )


def load_evaluation_declaration(path: str | Path) -> dict[str, Any]:
    """Reads and validates a declaration file (JSON or YAML, bounded); returns its JSON object.

    Raises:
        EvaluationDeclarationError: The file is unreadable or the declaration malformed.
    """
    from vertex_retrain.specs.safe_load import JOB_FILE_LIMITS, LoadError, load_file

    try:
        value = load_file(path, limits=JOB_FILE_LIMITS)
    except LoadError as error:
        raise EvaluationDeclarationError(f"{path}: {error}") from None
    return parse_evaluation_declaration(value).to_dict()
