"""Reading the evaluation's per-entity scores file and bootstrapping the primary metric.

The file's contract is :mod:`vertex_retrain.contracts.evaluation_scores`; the metrics file
names it (:mod:`vertex_retrain.contracts.evaluation`). The intervals come from
:mod:`vertex_retrain.steps.paired_bootstrap`: candidate minus the champion and minus the
reference the decision is about, resampling entities with the declaration's settings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vertex_retrain.contracts.evaluation import EvaluationMetrics
from vertex_retrain.contracts.evaluation_declaration import EvaluationDeclaration
from vertex_retrain.contracts.evaluation_scores import (
    CANDIDATE,
    CHAMPION,
    REFERENCE_PREFIX,
    EntityScores,
    check_scores,
)
from vertex_retrain.steps.backend import readable_path
from vertex_retrain.steps.paired_bootstrap import Interval, paired_differences

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["primary_intervals", "read_entity_scores", "scores_uri"]


def scores_uri(output_directory: str, file: str) -> str:
    """Where the scores file is: beside the metrics file, in the job's output folder."""
    return f"{output_directory.rstrip('/')}/{file}"


def _column(column: pa.ChunkedArray) -> Any:
    """A Parquet column as numpy: strings as a str array, nulls kept visible (NaN, None)."""
    import numpy as np
    import pyarrow as pa

    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        values = column.to_pylist()
        return np.asarray(values, dtype=object if None in values else str)
    return column.to_numpy(zero_copy_only=False)


def read_entity_scores(
    backend: str,
    output_directory: str,
    metrics: EvaluationMetrics,
    primary: str,
) -> EntityScores | None:
    """The validated scores file the metrics file names, or None when it names none or its
    metric is not ``primary`` (the interval is only about the metric the decision uses).

    Raises:
        FileNotFoundError: The metrics file names a scores file that is not there.
        ScoresContractError: The file breaks the contract or disagrees with the metrics file.
        ValueError: The file is not Parquet.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    named = metrics.scores
    if named is None or named.metric != primary:
        return None
    uri = scores_uri(output_directory, named.file)
    path = readable_path(backend, uri)
    if not path.is_file():
        raise FileNotFoundError(
            f"the metrics file names the scores file {named.file!r}, but there is none at {uri}"
        )
    try:
        table = pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as error:
        raise ValueError(f"{uri} is not a Parquet file: {error}") from None
    expected = {CANDIDATE: metrics.candidate.get(primary)}
    if metrics.champion is not None:
        expected[CHAMPION] = metrics.champion.get(primary)
    for name, values in metrics.references.items():
        expected[f"{REFERENCE_PREFIX}{name}"] = values.get(primary)
    return check_scores(
        {name: _column(table.column(name)) for name in table.column_names},
        expect_champion=metrics.champion is not None,
        metric_values={role: value for role, value in expected.items() if value is not None},
        source=uri,
    )


def primary_intervals(
    scores: EntityScores, declaration: EvaluationDeclaration, reference: str
) -> dict[str, Interval]:
    """Candidate minus ``champion`` (when scored) and minus ``reference:<reference>`` (when
    the file has its column), with the declaration's confidence settings."""
    others = {
        role: scores.roles[role]
        for role in (CHAMPION, f"{REFERENCE_PREFIX}{reference}" if reference else "")
        if role in scores.roles
    }
    if not others:
        return {}
    confidence = declaration.confidence
    return paired_differences(
        scores.weight,
        scores.roles[CANDIDATE],
        others,
        level=confidence.level,
        resamples=confidence.resamples,
        seed=confidence.seed,
    )
