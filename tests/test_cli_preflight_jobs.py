"""``preflight`` checks every CustomJob and tuning job a compiled pipeline would submit, as its
component builds it (vertex_retrain.cli.job_tasks), and applies the week-key cache rule only
to pipelines with a week; the README's evaluate-only example passes.

The pipelines are a user's own (tests/data/pipelines/user_jobs.py), not the templates.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.preflight_flags import SUBMISSION_FLAGS
from vertex_retrain.cli.cache_keys import cache_key_problems
from vertex_retrain.cli.compiling import compile_to_dict, default_arguments, write_spec
from vertex_retrain.cli.job_tasks import STAND_IN_IMAGE, job_tasks
from vertex_retrain.cli.main import main
from vertex_retrain.cli.spec_tasks import evaluate_condition, leaf_tasks

DATA = Path(__file__).resolve().parent / "data"
USER_JOBS = DATA / "pipelines" / "user_jobs.py"
README = Path(__file__).resolve().parent.parent / "README.md"
_README_PYTHON = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
EXAMPLE = '@dsl.pipeline(name="evaluate-only")'
IMAGE = "europe-west4-docker.pkg.dev/my-project/ml/vertex-retrain:1"
TUNE = "pipelinechannel--tune"


def _preflight(reference: str, *flags: str) -> tuple[int, dict[str, Any]]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["preflight", reference, "--component-image", IMAGE, "--location",
                     "europe-west4", "--json", *SUBMISSION_FLAGS, *flags])  # fmt: skip
    (result,) = json.loads(out.getvalue())
    return code, result


def test_preflight_refuses_three_a100s_on_an_n1_machine_naming_task_field_and_alternatives() -> (
    None
):
    code, result = _preflight(f"{USER_JOBS}:a100_times_three")
    assert code == 1
    (problem,) = [p for p in result["problems"] if p["severity"] == "error"]
    assert problem["field"] == (
        "task train: jobSpec.workerPoolSpecs[0].machineSpec.acceleratorType"
    )
    assert problem["value"] == "NVIDIA_TESLA_A100"
    assert "cannot run on n1-standard-4" in problem["message"]
    assert "machineType a2-highgpu-1g" in problem["alternatives"]


def test_preflight_checks_the_job_with_the_parameter_values_it_would_run_with() -> None:
    reference = f"{USER_JOBS}:shaped_by_parameters"
    assert _preflight(reference)[0] == 0  # its defaults: one A100 on a2-highgpu-1g
    code, result = _preflight(reference, "--param", "accelerators=3")
    assert code == 1
    (problem,) = [p for p in result["problems"] if p["severity"] == "error"]
    assert problem["field"].endswith("machineSpec.acceleratorCount") and problem["value"] == 3


def test_preflight_finds_jobs_in_nested_groups_and_skips_a_branch_that_does_not_run() -> None:
    reference = f"{USER_JOBS}:nested_jobs"
    # tune=false (the default): the study under dsl.If(tune == True) is not submitted.
    assert _preflight(reference)[0] == 0
    code, result = _preflight(reference, "--param", "tune=true")
    assert code == 1
    (problem,) = [p for p in result["problems"] if p["severity"] == "error"]
    assert problem["field"] == (
        "task tune: trialJobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount"
    )


def test_preflight_says_which_inputs_it_could_not_check() -> None:
    code, result = _preflight(f"{USER_JOBS}:nested_jobs")
    assert code == 0
    (unchecked,) = result["checked_at_run_time"]
    assert unchecked["code"] == "inputs-unchecked"
    assert unchecked["field"] == "task train: inputs" and unchecked["value"] == ["image_uri"]
    assert "an output of task 'image-location'" in unchecked["message"]
    # A limit of the check, not a risk of the pipeline: neither a problem nor a warning.
    assert result["warnings"] == 0 and not result["problems"]


def test_preflight_lists_inputs_set_at_run_time_apart_from_the_warnings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from vertex_retrain.cli.preflight import refusal

    code = main(["preflight", f"{USER_JOBS}:nested_jobs", "--component-image", IMAGE,
                 "--location", "europe-west4", *SUBMISSION_FLAGS])  # fmt: skip
    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    assert lines[0].endswith(": 0 error(s), 0 warning(s): ready to submit")
    assert lines[1].startswith("  not checked here: task train: inputs: image_uri (an output")
    assert len(lines) == 2
    from vertex_retrain.specs.problems import warning

    limit = warning("task train: inputs", ["image_uri"], "set as it runs", code="inputs-unchecked")
    risk = warning("task train: x", 1, "risky", code="risk")
    assert refusal("run", [limit, risk]) is None  # `run` goes on
    assert capsys.readouterr().err.splitlines() == ["run: " + risk.describe()]  # limits left out


def test_job_tasks_leave_out_problems_of_fields_an_unknown_input_sets() -> None:
    from tests.data.pipelines.user_jobs import nested_jobs

    spec = compile_to_dict(nested_jobs)
    (train,) = [job for job in job_tasks(spec, default_arguments(spec)) if job.name == "train"]
    # Its image is another task's output: a stand-in container builds the job, nothing about
    # the image is reported (no executor image is checked), and the machine is still checked.
    assert train.problems == () and train.executor_image_uri == ""
    assert train.payload is not None
    pool = train.payload["jobSpec"]["workerPoolSpecs"][0]
    assert pool["machineSpec"] == {"machineType": "n1-standard-4"}
    assert pool["containerSpec"]["imageUri"] == STAND_IN_IMAGE


def test_preflight_accepts_the_readme_evaluate_only_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README.md's "another repository" example, run as written: importers feed
    evaluate_model, loaded from the compiled component file."""
    from vertex_retrain.components.evaluate_model import evaluate_model

    (block,) = [code for code in _README_PYTHON.findall(README.read_text()) if EXAMPLE in code]
    write_spec(
        compile_to_dict(evaluate_model, IMAGE), tmp_path / "dist/components/evaluate_model.yaml"
    )
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "readme_example"}
    # dont_inherit: KFP reads the example's annotations as objects, not this module's strings.
    exec(compile(block, "README.md", "exec", dont_inherit=True), namespace)
    compiled = tmp_path / "evaluate-only.yaml"
    write_spec(compile_to_dict(namespace["evaluate_only"]), compiled)
    code, result = _preflight(str(compiled))
    assert code == 0, result
    assert result["errors"] == 0
    assert "cache-key" not in {p["code"] for p in result["problems"]}


def test_cache_rule_applies_to_pipelines_with_a_data_window_only() -> None:
    from tests.data.pipelines.stale_cache import stale_dataset
    from tests.data.pipelines.user_jobs import register_only

    week = compile_to_dict(stale_dataset)
    assert [p.split("'")[1] for p in cache_key_problems(week)] == ["prepare-dataset"]
    # The same kind of cached task, fed by an importer, in a pipeline without a week.
    no_week = compile_to_dict(register_only)
    tasks = no_week["root"]["dag"]["tasks"]
    assert tasks["importer"]["cachingOptions"]["enableCache"] is True
    assert cache_key_problems(no_week) == []


def test_cache_rule_never_counts_an_importer_as_a_problem() -> None:
    from tests.data.pipelines.stale_cache import stale_dataset
    from tests.data.pipelines.user_jobs import register_only

    # An importer inside a weekly pipeline: register_only's tasks next to a data window.
    spec = compile_to_dict(stale_dataset)
    other = compile_to_dict(register_only)
    spec["root"]["dag"]["tasks"]["importer"] = other["root"]["dag"]["tasks"]["importer"]
    spec["components"].update(other["components"])
    spec["deploymentSpec"]["executors"].update(other["deploymentSpec"]["executors"])
    named = [p.split("'")[1] for p in cache_key_problems(spec)]
    assert named == ["prepare-dataset"]


@pytest.mark.parametrize(
    ("condition", "values", "holds"),
    [
        ("inputs.parameter_values['pipelinechannel--tune'] == true", {TUNE: True}, True),
        ("!(inputs.parameter_values['pipelinechannel--tune'] == true)", {TUNE: True}, False),
        ("inputs.parameter_values['k'] == 'abc'", {"k": "abc"}, True),
        ("int(inputs.parameter_values['n']) > 3", {"n": 2}, False),
        ("inputs.parameter_values['a'] == 1 && inputs.parameter_values['b'] == 2", {"a": 1}, None),
        ("inputs.parameter_values['a'] == 1 && inputs.parameter_values['b'] == 2", {"a": 0}, False),
        ("inputs.parameter_values['a'] == 1 || inputs.parameter_values['b'] == 2", {"a": 1}, True),
        ("something KFP may write one day", {}, None),
    ],
)  # fmt: skip
def test_evaluate_condition_decides_what_it_can(
    condition: str, values: dict[str, Any], holds: bool | None
) -> None:
    assert evaluate_condition(condition, values) is holds


def test_leaf_tasks_pass_parameters_into_groups_and_fill_channels_in_constants() -> None:
    from tests.data.pipelines.user_jobs import nested_jobs

    spec = compile_to_dict(nested_jobs)
    arguments = {"tune": True, "trial_accelerators": 2}
    tasks = {task.path.rsplit("/", 1)[-1]: task for task in leaf_tasks(spec, arguments)}
    assert tasks["tune"].runs is True and tasks["tune"].parameters["accelerator_count"] == 2
    assert tasks["tune"].parameters["parameter_specs"][0]["parameterId"] == "lr"
    assert tasks["train"].unknown == {"image_uri": "an output of task 'image-location'"}
    missing = {t.path.rsplit("/", 1)[-1]: t for t in leaf_tasks(spec, {})}
    assert missing["tune"].runs is None  # the condition's input has no value
    assert "pipeline parameter 'trial_accelerators' has no value" in str(missing["tune"].unknown)
