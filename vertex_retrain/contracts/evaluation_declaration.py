"""The evaluation declaration: which metrics decide, in which direction, and by how much.

A team declares how its candidate is judged once, as a JSON or YAML object, and passes it to
``evaluate_model`` (the pipelines' ``evaluation_declaration`` parameter)::

    primary: rmse                   # the metric the decision is made on
    metrics: {rmse: lower, mae: lower, coverage: higher}   # every metric named below
    min_improvement: 0.0            # the primary metric must improve by more than this
    guardrails: {mae: 0.5}          # largest allowed worsening of another metric
    floors: {rmse: 40.0}            # what the candidate must reach, champion or not
    reference: seasonal_naive       # the candidate must beat this reference (or the
                                    # strongest of a list: [seasonal_naive, mean])
    confidence:                     # the paired bootstrap interval (optional)
      level: 0.95                   # its coverage
      resamples: 1000               # bootstrap resamples of the entities
      seed: 0                       # the resampling is seeded: the same files, the same interval
      require: false                # true: the gate decides on the interval's bound

Improvement and worsening are measured in each metric's direction: for a ``lower`` metric an
RMSE going from 12 to 11 improves it by 1. A floor is a minimum for a ``higher`` metric and a
maximum for a ``lower`` one. ``reference`` names one or more of the references the evaluation
entry point writes in its metrics file (:mod:`.evaluation`); the candidate must beat it (with
several, the strongest of them on the primary metric, on the same rows) before it can become
the champion, the first one included. A first champion needs something to beat: a
declaration with neither a reference nor a floor deploys no first champion unless a person
overrides the decision with a reason.

``confidence`` configures the paired bootstrap interval of the primary metric's difference,
candidate minus champion and candidate minus reference, computed when the evaluation writes a
per-entity scores file (:mod:`.evaluation_scores`). With ``require: true`` the decision uses
the interval's bound in the metric's direction instead of the point estimate: the candidate's
gain over the champion must exceed ``min_improvement`` and its gain over the reference 0 at
the bound, and a missing scores file fails the evaluation. This module is pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from vertex_retrain.contracts.guide import EVALUATION_DECLARATION, see
from vertex_retrain.contracts.shown import shown

__all__ = [
    "DIRECTIONS",
    "Confidence",
    "EvaluationDeclaration",
    "EvaluationDeclarationError",
    "load_evaluation_declaration",
    "parse_evaluation_declaration",
]

DIRECTIONS = ("higher", "lower")
"""Which way a metric improves."""

_KEYS = ("primary", "metrics", "min_improvement", "guardrails", "floors", "reference", "confidence")
_CONFIDENCE_KEYS = ("level", "resamples", "seed", "require")
MAX_RESAMPLES = 100_000


class EvaluationDeclarationError(ValueError):
    """The declaration is malformed; the message names the field, the value and what works."""


@dataclass(frozen=True)
class Confidence:
    """How the paired bootstrap interval is computed, and whether the gate decides on it.

    Attributes:
        level: The interval's coverage, e.g. 0.95 (a two-sided percentile interval).
        resamples: Bootstrap resamples of the entities.
        seed: Seeds the resampling.
        require: Decide on the interval's bound instead of the point estimate.
    """

    level: float = 0.95
    resamples: int = 1000
    seed: int = 0
    require: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The JSON object it parses from."""
        return {
            "level": self.level,
            "resamples": self.resamples,
            "seed": self.seed,
            "require": self.require,
        }


@dataclass(frozen=True)
class EvaluationDeclaration:
    """A validated evaluation declaration (see the module docstring).

    Attributes:
        primary: The metric the decision is made on.
        directions: Metric -> ``higher`` or ``lower`` (every metric named here).
        min_improvement: The primary metric must improve by more than this.
        guardrails: Metric -> largest allowed worsening (>= 0).
        floors: Metric -> the bound the candidate must reach.
        references: The references the candidate must beat on the primary metric (the
            strongest of them); empty when none is declared.
        confidence: The paired bootstrap interval's settings.
    """

    primary: str
    directions: dict[str, str]
    min_improvement: float = 0.0
    guardrails: dict[str, float] = field(default_factory=dict)
    floors: dict[str, float] = field(default_factory=dict)
    references: tuple[str, ...] = ()
    confidence: Confidence = field(default_factory=Confidence)

    @property
    def has_bar(self) -> bool:
        """Whether a first champion has something to beat: a reference or a floor."""
        return bool(self.references or self.floors)

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
            "confidence": self.confidence.to_dict(),
        }
        if len(self.references) == 1:
            out["reference"] = self.references[0]
        elif self.references:
            out["reference"] = list(self.references)
        return out


def _fail(path: str, value: Any, expected: str) -> NoReturn:
    raise EvaluationDeclarationError(
        f"evaluation declaration: {path} is {shown(value)}; expected {expected} "
        f"({see(EVALUATION_DECLARATION)})"
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
            "floors, reference, confidence); pass --param evaluation_declaration=@evaluation.yaml",
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
    if not isinstance(primary, str) or primary not in directions:  # a list is unhashable
        _fail("primary", primary, f"a metric declared under metrics: {', '.join(directions)}")
    return EvaluationDeclaration(
        primary=primary,
        directions=directions,
        min_improvement=_number(value.get("min_improvement", 0.0), "min_improvement"),
        guardrails=_per_metric(value.get("guardrails"), "guardrails", directions, at_least=0.0),
        floors=_per_metric(value.get("floors"), "floors", directions),
        references=_references(value.get("reference")),
        confidence=_confidence(value.get("confidence")),
    )


def _references(value: Any) -> tuple[str, ...]:
    expected = "a reference name the metrics file reports, or a list of them (the strongest counts)"
    if value is None:
        return ()
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names:
        _fail("reference", value, expected)
    for index, name in enumerate(names):
        if not isinstance(name, str) or not name.strip():
            _fail("reference" if isinstance(value, str) else f"reference[{index}]", name, expected)
    if len(set(names)) != len(names):
        _fail("reference", value, "a list of distinct reference names")
    return tuple(names)


def _confidence(value: Any) -> Confidence:
    if value is None:
        return Confidence()
    if not isinstance(value, Mapping):
        _fail("confidence", value, f"an object with {', '.join(_CONFIDENCE_KEYS)}")
    unknown = sorted(str(key) for key in value if key not in _CONFIDENCE_KEYS)
    if unknown:
        _fail(f"confidence.{unknown[0]}", value[unknown[0]],
              f"one of the keys {', '.join(_CONFIDENCE_KEYS)}")  # fmt: skip
    level = _number(value.get("level", 0.95), "confidence.level")
    if not 0.5 <= level < 1:
        _fail("confidence.level", level, "a coverage in [0.5, 1), e.g. 0.95")
    resamples = _integer(value.get("resamples", 1000))
    if resamples is None or not 100 <= resamples <= MAX_RESAMPLES:
        _fail(
            "confidence.resamples",
            value.get("resamples"),
            f"an integer from 100 to {MAX_RESAMPLES}",
        )
    seed = _integer(value.get("seed", 0))
    if seed is None or seed < 0:
        _fail("confidence.seed", value.get("seed"), "an integer >= 0")
    require = value.get("require", False)
    if not isinstance(require, bool):
        _fail("confidence.require", require, "true or false")
    return Confidence(level=level, resamples=resamples, seed=seed, require=require)


def _integer(value: Any) -> int | None:
    """``value`` as an int, or None; an integral float counts (a pipeline parameter of type
    dict carries every number as a double, so 1000 arrives as 1000.0)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


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
