"""Fuzzing `compile.py validate` with the structure of job files, not only their values.

Two strategies feed the command's handler (`run_validate`, which the CLI calls; an exception
here would be a traceback there):
- arbitrary JSON trees whose keys are mostly real field names of `aiplatform_v1.CustomJob`
  and `HyperparameterTuningJob` (both spellings), with hostile scalars at every level;
- the valid example jobs of `tests/data/jobs`, with random subtrees replaced by such trees,
  deleted, or wrapped in a list, so the fuzz reaches the rules deep inside a valid job.

Each document is written as JSON or YAML. The property: the handler returns 0 or 1, and its
`--json` report is strict JSON (no NaN, no date, no Python object).
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from vertex_retrain.cli.validate_command import run_validate
from vertex_retrain.specs.proto_fields import job_field_table
from vertex_retrain.specs.safe_load import load_file

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "0")) or None
FUZZ = settings(max_examples=EXAMPLES or 150, deadline=None)
JOBS = Path(__file__).resolve().parent / "data" / "jobs"

FIELD_NAMES = sorted(
    {key for message in job_field_table().values() for key in message.fields}
    | {"labels", "jobSpec", "trialJobSpec", "studySpec", "workerPoolSpecs"}
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(
        [
            "", "0", "-1", "1e999", "3600s", "-5s", "SPOT", "FLEX_START", "ON_DEMAND",
            "n1-standard-4", "a2-highgpu-8g", "ct5lp-hightpu-4t", "NVIDIA_TESLA_T4",
            "TPU_V5_LITEPOD", "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest",
            "gs://b/x", "2024-01-01", "MAXIMIZE", "UNIT_LOG_SCALE", "reduction-server",
            "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest",
        ]
    )
    | st.text(max_size=12)
)  # fmt: skip
KEYS = st.sampled_from(FIELD_NAMES) | st.text(max_size=8)
TREES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=6),
    max_leaves=40,
)
BASES = [load_file(path) for path in sorted(JOBS.glob("valid_*")) + sorted(JOBS.glob("warn*"))]


def _paths(tree: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(tree, dict):
        for key, value in tree.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(tree, list):
        for index, value in enumerate(tree):
            found += _paths(value, (*prefix, index))
    return found


def _mutate(tree: Any, path: tuple[Any, ...], how: str, new: Any) -> Any:
    if not path:
        return new if how == "replace" else [tree]
    head, rest = path[0], path[1:]
    copy: Any = dict(tree) if isinstance(tree, dict) else list(tree)
    if not rest and how == "delete":
        del copy[head]
    elif not rest and how == "wrap":
        copy[head] = [copy[head]]
    else:
        copy[head] = _mutate(copy[head], rest, how, new)
    return copy


@st.composite
def mutated_jobs(draw: st.DrawFn) -> Any:
    document = draw(st.sampled_from(BASES))
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        path = draw(st.sampled_from(_paths(document)))
        how = draw(st.sampled_from(["replace", "replace", "delete", "wrap"]))
        if how == "delete" and not path:
            how = "replace"
        document = _mutate(document, path, how, draw(TREES))
    return document


def _check(folder: Path, document: Any, as_yaml: bool, as_json: bool) -> None:
    path = folder / ("job.yaml" if as_yaml else "job.json")
    text = yaml.safe_dump(document) if as_yaml else json.dumps(document)
    path.write_text(text, encoding="utf-8")
    out = io.StringIO()
    code = run_validate([str(path)], as_json, out)
    assert code in (0, 1)
    if as_json:
        report = json.loads(out.getvalue(), parse_constant=pytest.fail)
        assert isinstance(report, list)
        assert (code == 1) == any(p["severity"] == "error" for p in report)
    else:
        assert out.getvalue().rstrip().endswith(("error(s), 0 warning(s))", "warning(s))"))


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz_validate")


@FUZZ
@given(document=TREES, as_yaml=st.booleans(), as_json=st.booleans())
def test_validate_answers_arbitrary_trees_with_problems_never_a_traceback(
    folder: Path, document: Any, as_yaml: bool, as_json: bool
) -> None:
    _check(folder, document, as_yaml, as_json)


@FUZZ
@given(document=mutated_jobs(), as_yaml=st.booleans(), as_json=st.booleans())
def test_validate_answers_mutated_valid_jobs_with_problems_never_a_traceback(
    folder: Path, document: Any, as_yaml: bool, as_json: bool
) -> None:
    _check(folder, document, as_yaml, as_json)
