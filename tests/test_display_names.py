"""Display names Vertex limits (1 to 128 characters), refused before a run starts: a
129-character ``model_display_name`` used to train and evaluate and fail at register-model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.examples import DRINK_SHOPS
from vertex_retrain.cli.main import main
from vertex_retrain.cli.preflight_checks import Settings, pipeline_problems
from vertex_retrain.specs.display_names import (
    EVALUATION_JOB_SUFFIX,
    MAX_DISPLAY_NAME,
    display_name_problems,
    evaluates,
)

WEEKLY = f"{DRINK_SHOPS / 'pipelines.py'}:weekly"
LONGEST = "m" * MAX_DISPLAY_NAME
TOO_LONG = "m" * (MAX_DISPLAY_NAME + 1)


@pytest.mark.parametrize(
    ("arguments", "refused"),
    [
        ({"model_display_name": LONGEST, "endpoint_display_name": LONGEST}, []),
        ({"model_display_name": TOO_LONG}, ["--param model_display_name"]),
        ({"model_display_name": "m", "endpoint_display_name": TOO_LONG},
         ["--param endpoint_display_name"]),
        ({"model_display_name": "m", "endpoint_display_name": ""}, []),  # no deployment
        ({"model_display_name": " "}, ["--param model_display_name"]),
        ({"model_display_name": 7}, ["--param model_display_name"]),
        ({"other_name": TOO_LONG}, []),
    ],
    ids=["128", "model-129", "endpoint-129", "no-endpoint", "blank-model", "number", "other"],
)  # fmt: skip
def test_display_name_problems_refuse_names_vertex_refuses(
    arguments: dict[str, Any], refused: list[str]
) -> None:
    problems = display_name_problems(arguments)
    assert [p.field for p in problems] == refused
    assert all(p.severity == "error" for p in problems)


@pytest.mark.parametrize(
    ("length", "limit"), [(MAX_DISPLAY_NAME + 1, MAX_DISPLAY_NAME), (118, 117)], ids=["129", "118"]
)
def test_run_refuses_a_129_character_model_name_before_anything_runs(
    root: Path, capsys: pytest.CaptureFixture[str], length: int, limit: int
) -> None:
    # --local: nothing may start (no run folder, no task) before the name is refused. The
    # weekly pipeline evaluates: its evaluation job's name takes 11 characters more.
    code = main(["run", WEEKLY, "--local", "--param", f"model_display_name={'m' * length}"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1, err
    assert err.startswith("run: error: --param model_display_name")
    assert f"{length} characters; Vertex takes at most {limit} in this display name" in err
    assert not (root / "pipeline-root").exists() and not (root / "runs").exists()


def test_preflight_reports_a_long_endpoint_name() -> None:
    problems = pipeline_problems({}, {"endpoint_display_name": TOO_LONG}, Settings())
    assert "--param endpoint_display_name" in [p.field for p in problems]


def test_run_local_from_python_refuses_a_129_character_model_name(root: Path) -> None:
    from vertex_retrain import run_local

    with pytest.raises(ValueError, match="129 characters; Vertex takes at most 128"):
        run_local(WEEKLY, {"model_display_name": TOO_LONG})
    assert not (root / "pipeline-root").exists() and not (root / "runs").exists()


def test_a_model_name_leaves_room_for_its_evaluation_job_s_name() -> None:
    # The evaluation job is named <model>-evaluation: 117 characters is the most that fits.
    room = MAX_DISPLAY_NAME - len(EVALUATION_JOB_SUFFIX)
    assert display_name_problems({"model_display_name": "m" * room}, evaluation_job=True) == []
    (problem,) = display_name_problems(
        {"model_display_name": "m" * (room + 1)}, evaluation_job=True
    )
    assert f"Vertex takes at most {room} in this display name" in problem.message
    assert display_name_problems({"model_display_name": "m" * (room + 1)}) == []


def test_evaluates_finds_the_library_s_evaluation_step() -> None:
    assert evaluates({"components": {"comp-evaluate-model": {}, "comp-train": {}}})
    assert not evaluates({"components": {"comp-train": {}}})
    assert not evaluates({})


def test_the_evaluation_job_is_named_with_the_suffix_the_check_allows_for() -> None:
    from vertex_retrain.steps.evaluate import EvaluationRequest, evaluation_job_request

    request = EvaluationRequest(
        backend="local",
        candidate_uri="gs://b/c",
        dataset_uri="gs://b/d",
        model_display_name="recs",
        output_directory="gs://b/o",
        python_module="m.evaluate",
        package_uris=["gs://b/p.whl"],
        evaluation_declaration={"primary": "rmse", "metrics": {"rmse": "lower"}},
    )
    assert evaluation_job_request(request, None).display_name == "recs" + EVALUATION_JOB_SUFFIX


def test_job_validation_refuses_a_display_name_over_128_characters() -> None:
    from vertex_retrain.specs.validate import validate_custom_job

    def payload(name: str) -> dict[str, Any]:
        return {
            "displayName": name,
            "jobSpec": {
                "workerPoolSpecs": [
                    {
                        "machineSpec": {"machineType": "n1-standard-4"},
                        "replicaCount": 1,
                        "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/i:1"},
                    }
                ]
            },
        }

    assert validate_custom_job(payload(LONGEST)) == []
    (problem,) = validate_custom_job(payload(TOO_LONG))
    assert problem.field == "displayName" and problem.code == "display-name"


def _said(problem: Any) -> tuple[Any, ...]:
    return (problem.field, problem.value, problem.message, problem.alternatives, problem.code)


@pytest.mark.parametrize("value", [None, 7, "", "   "])
def test_display_name_problems_say_a_model_needs_a_name(value: Any) -> None:
    assert [_said(p) for p in display_name_problems({"model_display_name": value})] == [
        ("--param model_display_name", value, "Vertex needs a display name here.", ("my-model",),
         "name"),
    ]  # fmt: skip


def test_display_name_problems_say_an_endpoint_name_must_be_text() -> None:
    assert [_said(p) for p in display_name_problems({"endpoint_display_name": None})] == [
        ("--param endpoint_display_name", None, "Vertex needs a display name here.",
         ("my-model",), "name"),
    ]  # fmt: skip


def test_display_name_problems_name_the_length_and_the_limit() -> None:
    assert [_said(p) for p in display_name_problems({"endpoint_display_name": TOO_LONG})] == [
        ("--param endpoint_display_name", TOO_LONG,
         "129 characters; Vertex takes at most 128 in this display name.",
         ("a name of 1 to 128 characters",), "name"),
    ]  # fmt: skip


@pytest.mark.parametrize(("length", "refused"), [(117, False), (118, True)])
def test_display_name_problems_leave_room_for_the_evaluation_job_s_suffix(
    length: int, refused: bool
) -> None:
    name = "abcdefghij" * 12
    name = name[:length]
    arguments = {"model_display_name": name, "endpoint_display_name": name}
    problems = display_name_problems(arguments, evaluation_job=True)
    expected = [
        ("--param model_display_name", name,
         f"{length} characters; Vertex takes at most 117 in this display name (its evaluation "
         "job is named abcdefgh...-evaluation).",
         ("a name of 1 to 117 characters",), "name"),
    ]  # fmt: skip
    assert [_said(p) for p in problems] == (expected if refused else [])
    # Without an evaluation job, or for the endpoint, the whole 128 characters are free.
    assert display_name_problems(arguments) == []
