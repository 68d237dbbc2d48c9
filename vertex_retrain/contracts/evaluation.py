"""The evaluation contract: how ``evaluate_model`` runs a training package's scoring code.

``evaluate_model`` runs the package's evaluation entry point (``python -m MODULE``, the
module the pipeline's ``evaluation_module`` names) as a CustomJob with these flags::

    --candidate-model-dir=URI   the candidate's model folder (gs://, /gcs/ or local)
    --champion-model-dir=URI    the champion's model folder; absent when there is none
    --data=URI                  the prepared dataset folder (holds manifest.json)
    --metrics-output=URI        where to write the metrics JSON file

and reads back the file it wrote at ``--metrics-output``::

    {
      "format": "vertex-retrain-evaluation-metrics/v1",
      "candidate": {"rmse": 11.2, "mae": 7.9, ...},
      "champion": {"rmse": 11.6, ...} | null,          # null exactly when no champion flag
      "references": {"seasonal_naive": {"rmse": 13.0, ...}},  # optional, on the same rows
      "scores": {"file": "scores.parquet", "metric": "mae"}     # optional, see below
    }

A reference is a simple predictor scored on the same rows (last year's value, popularity...);
the evaluation declaration may require the candidate to beat one
(:mod:`.evaluation_declaration`). ``"baseline": {...}`` is read as the reference named
``baseline``.

``scores`` names a per-entity scores file written beside the metrics file (a plain file
name, no folder) and the metric it holds (:mod:`.evaluation_scores`): the library resamples its
entities for the paired bootstrap interval of the primary metric.

Metric names are non-empty strings and values finite numbers (booleans are refused); a
metric that has no finite value is left out. Other top-level keys are ignored. The entry
point should write the file atomically (a temporary file, then a rename) and exit non-zero on
failure. This module only builds the flags and validates the file: it is pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from vertex_retrain.contracts.guide import EVALUATION_CONTRACT, see
from vertex_retrain.contracts.shown import shown

__all__ = [
    "CANDIDATE_FLAG",
    "CHAMPION_FLAG",
    "DATA_FLAG",
    "METRICS_FORMAT",
    "METRICS_OUTPUT_FLAG",
    "EvaluationContractError",
    "EvaluationMetrics",
    "ScoresFile",
    "evaluation_args",
    "parse_metrics",
]

CANDIDATE_FLAG = "--candidate-model-dir"
CHAMPION_FLAG = "--champion-model-dir"
DATA_FLAG = "--data"
METRICS_OUTPUT_FLAG = "--metrics-output"

METRICS_FORMAT = "vertex-retrain-evaluation-metrics/v1"
"""The ``format`` value the metrics file must carry."""


class EvaluationContractError(ValueError):
    """The metrics file breaks the contract; the message names the field and what it needs."""


@dataclass(frozen=True)
class ScoresFile:
    """The per-entity scores file a metrics file names.

    Attributes:
        file: Its name, in the metrics file's folder.
        metric: The metric it holds per entity.
    """

    file: str
    metric: str


@dataclass(frozen=True)
class EvaluationMetrics:
    """A validated metrics file.

    Attributes:
        candidate: The candidate's metrics.
        champion: The champion's metrics, or None when no champion was scored.
        references: Each reference's metrics on the same rows, by name (empty when none).
        scores: The per-entity scores file, or None when the entry point wrote none.
    """

    candidate: dict[str, float]
    champion: dict[str, float] | None
    references: dict[str, dict[str, float]] = field(default_factory=dict)
    scores: ScoresFile | None = None


def evaluation_args(
    *, candidate_model_dir: str, champion_model_dir: str | None, data: str, metrics_output: str
) -> list[str]:
    """The entry point's contract flags, as ``--flag=value`` (a value may start with ``-``).

    Args:
        candidate_model_dir: The candidate's model folder.
        champion_model_dir: The champion's model folder, or None (the flag is then omitted).
        data: The prepared dataset folder.
        metrics_output: Where the metrics JSON goes.
    """
    args = [
        f"{CANDIDATE_FLAG}={candidate_model_dir}",
        f"{DATA_FLAG}={data}",
        f"{METRICS_OUTPUT_FLAG}={metrics_output}",
    ]
    if champion_model_dir:
        args.append(f"{CHAMPION_FLAG}={champion_model_dir}")
    return args


def parse_metrics(payload: Any, *, expect_champion: bool, source: str) -> EvaluationMetrics:
    """Validates a decoded metrics file.

    Args:
        payload: The decoded JSON.
        expect_champion: Whether a champion was passed (``champion`` must then be an
            object, else null or absent).
        source: Where the file was read, for messages.

    Returns:
        The metrics, as floats.

    Raises:
        EvaluationContractError: A key is missing or of the wrong type, a value is not a
            finite number, or ``champion`` disagrees with ``expect_champion``.
    """
    if not isinstance(payload, Mapping):
        _fail(source, "the file", payload, f"a JSON object with {_SHAPE}")
    if payload.get("format") != METRICS_FORMAT:
        _fail(source, "format", payload.get("format"), repr(METRICS_FORMAT))
    if "candidate" not in payload:
        _fail(source, "candidate", None, "an object of metric name -> number (key missing)")
    candidate = _metrics(payload["candidate"], "candidate", source, allow_empty=False)
    champion_value = payload.get("champion")
    if expect_champion and champion_value is None:
        _fail(
            source,
            "champion",
            champion_value,
            f"the champion's metrics: {CHAMPION_FLAG} was given, so the champion must be scored",
        )
    if not expect_champion and champion_value is not None:
        _fail(
            source,
            "champion",
            "{...}",
            f"null: no {CHAMPION_FLAG} was given, so these metrics cannot be the champion's "
            "(a stale file?)",
        )
    champion = (
        _metrics(champion_value, "champion", source, allow_empty=False)
        if champion_value is not None
        else None
    )
    return EvaluationMetrics(
        candidate=candidate,
        champion=champion,
        references=_references(payload, source),
        scores=_scores(payload.get("scores"), source),
    )


_SHAPE = '"format", "candidate", "champion" and optionally "references" and "scores"'


def _scores(value: Any, source: str) -> ScoresFile | None:
    if value is None:
        return None
    shape = 'an object {"file": "scores.parquet", "metric": "<metric>"}'
    if not isinstance(value, Mapping):
        _fail(source, "scores", value, shape)
    name, metric = value.get("file"), value.get("metric")
    # A plain name: the file sits beside the metrics file, never elsewhere.
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or name in (".", ".."):
        _fail(source, "scores.file", name, "a file name beside the metrics file (no folder)")
    if not isinstance(metric, str) or not metric:
        _fail(source, "scores.metric", metric, "the name of the metric the file holds")
    return ScoresFile(file=name, metric=metric)


def _references(payload: Mapping[str, Any], source: str) -> dict[str, dict[str, float]]:
    found: dict[str, dict[str, float]] = {}
    given = payload.get("references")
    if given is not None:
        if not isinstance(given, Mapping):
            _fail(source, "references", given, "an object of reference name -> metrics")
        for name, metrics in given.items():
            if not isinstance(name, str) or not name:
                _fail(source, f"references.{name!r}", name, "a non-empty reference name")
            found[name] = _metrics(metrics, f"references.{name}", source, allow_empty=True)
    if payload.get("baseline") is not None and "baseline" not in found:
        found["baseline"] = _metrics(payload["baseline"], "baseline", source, allow_empty=True)
    return found


def _metrics(value: Any, name: str, source: str, *, allow_empty: bool) -> dict[str, float]:
    if not isinstance(value, Mapping):
        _fail(source, name, value, "an object of metric name -> number")
    if not value and not allow_empty:
        _fail(source, name, value, "at least one metric")
    out: dict[str, float] = {}
    for key, number in value.items():
        if not isinstance(key, str) or not key:
            _fail(source, f"{name}.{key!r}", key, "a non-empty metric name")
        # bool is an int subclass; True as a metric is a bug in the writer, not a 1.0.
        if isinstance(number, bool) or not isinstance(number, int | float):
            _fail(source, f"{name}.{key}", number, "a number")
        if not math.isfinite(number):
            _fail(source, f"{name}.{key}", number, "a finite number (leave the metric out)")
        out[key] = float(number)
    return out


def _fail(source: str, field_name: str, value: Any, expected: str) -> NoReturn:
    raise EvaluationContractError(
        f"{source}: field {field_name} is {shown(value)}; expected {expected} "
        f"(evaluation contract: {see(EVALUATION_CONTRACT)})"
    )
