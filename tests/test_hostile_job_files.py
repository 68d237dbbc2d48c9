"""Hostile YAML and JSON handed to the library: alias bombs, self-reference, deep nesting,
wrong types, dates, devices and FIFOs.

Each file goes through `compile.py validate` in this process (`main([...])`), so a traceback
would fail the test as an exception, and through the loader it uses
(`vertex_retrain.specs.safe_load`). Compiled templates and `--param` JSON take the same
loader (`load_pipeline_spec`, `parse_overrides`).
"""

from __future__ import annotations

import json
import os
import re
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from vertex_retrain.cli.main import main
from vertex_retrain.cli.params import (
    ParameterError,
    TemplateError,
    load_pipeline_spec,
    parse_overrides,
)
from vertex_retrain.cli.template_upload import UploadError, read_template
from vertex_retrain.specs.safe_load import LoadError, load_file, parse_json, parse_yaml

POOL = (
    "  workerPoolSpecs:\n"
    "  - machineSpec: {machineType: n1-standard-4}\n"
    "    replicaCount: 1\n"
    "    containerSpec: {imageUri: us-docker.pkg.dev/p/r/i:1}\n"
)
ALIAS_BOMB = "\n".join(
    ["a: &a [x, x, x, x, x, x, x, x, x]"]
    + [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]" for i in range(8)]
    + ["jobSpec: *i"]
)


def _validate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["validate", *args])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return code, captured.out + captured.err


def test_alias_bomb_is_refused_before_it_grows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(ALIAS_BOMB)
    tracemalloc.start()
    try:
        with pytest.raises(LoadError, match="aliases"):
            load_file(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20  # expanded, the bomb holds 9**9 strings (gigabytes)
    code, out = _validate(capsys, str(path))
    assert code == 1
    assert "uses aliases more than 100 times" in out and "INVALID" in out


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: &a [*a]\n", "contains itself"),
        ("jobSpec: &j {workerPoolSpecs: [*j]}\n", "contains itself"),
        ("[" * 1000 + "]" * 1000, "nested more than 64"),
        ("a: " + "[" * 1000 + "]" * 1000, "nested more than 64"),
        ("jobSpec: " + "{a: " * 70 + "1" + "}" * 70, "nested more than 64"),
        ("a: !!binary aGVsbG8=\n", "not valid YAML"),
        ("a: !!python/object:os.system {}\n", "not valid YAML"),
        ("a: !!set {x}\n", "not valid YAML"),
        ("labels: {on: x}\n", "key True under labels is not a string"),
        ("labels: {1: x}\n", "key 1 under labels is not a string"),
        ("x: .nan\n", "x is nan"),
        ("x: [-.inf]\n", "x[0] is -inf"),
        ("a: 1\n---\nb: 2\n", "not valid YAML"),
        ("a: 1\x00\n", "unacceptable character #x0000"),
        ("a: \x07\n", "unacceptable character #x0007"),
    ],
    ids=[
        "self-alias", "self-alias-in-pools", "flow-1000", "nested-1000", "depth-70",
        "binary", "python-tag", "set", "bool-key", "int-key", "nan", "inf", "two-documents",
        "nul", "control-character",
    ],
)  # fmt: skip
def test_validate_refuses_hostile_yaml_with_one_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(text)
    with pytest.raises(LoadError, match=re.escape(expected)):
        load_file(path)
    code, out = _validate(capsys, str(path))
    assert code == 1
    assert expected in out and "INVALID (1 error(s)" in out


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[" * 1000 + "]" * 1000, "nested more than 64"),
        ("[" * 100_000, "nested more than 64"),
        ('{"a": NaN}', "NaN is not allowed"),
        ('{"a": [1e999]}', "a[0] is inf"),
        ('{"a": 1', "not valid JSON (line 1"),
    ],
    ids=["nested-1000", "open-100000", "nan", "overflow", "truncated"],
)
def test_validate_refuses_hostile_json_with_one_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    path = tmp_path / "job.json"
    path.write_text(text)
    code, out = _validate(capsys, str(path))
    assert code == 1
    assert expected in out


@pytest.mark.parametrize(
    ("keys", "value", "reported"),
    [
        (("containerSpec", "imageUri"), 42, "containerSpec.imageUri"),
        (("replicaCount",), [1], "replicaCount"),
        (("machineSpec",), "n1-standard-4", "machineSpec"),
        (("containerSpec", "args"), ["--epochs", 3], "containerSpec.args[1]"),
        (("machineSpec", "acceleratorCount"), "two", "machineSpec.acceleratorCount"),
    ],
)
def test_validate_reports_wrong_types_in_pools_as_problems(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    keys: tuple[str, ...],
    value: object,
    reported: str,
) -> None:
    pool: dict[str, Any] = {
        "machineSpec": {"machineType": "n1-standard-4"},
        "replicaCount": 1,
        "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/i:1"},
    }
    parent = pool
    for key in keys[:-1]:
        parent = parent[key]
    parent[keys[-1]] = value
    path = tmp_path / "job.json"
    path.write_text(json.dumps({"displayName": "x", "jobSpec": {"workerPoolSpecs": [pool]}}))
    code, out = _validate(capsys, "--json", str(path))
    assert code == 1
    problems = json.loads(out)
    wrong = [p for p in problems if p["code"] == "wrong-type"]
    assert [p["field"] for p in wrong] == [f"jobSpec.workerPoolSpecs[0].{reported}"]
    assert "must be" in wrong[0]["message"]
    # Nothing is reported again at or below the refused field ("imageUri missing"...).
    field = "jobSpec.workerPoolSpecs[0]." + ".".join(keys)
    assert not [p for p in problems if p["field"].startswith(field) and p not in wrong]


def test_validate_reports_the_issue_s_three_wrong_types(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    custom = tmp_path / "custom.yaml"
    custom.write_text(
        "displayName: x\njobSpec:\n  scheduling: {strategy: [SPOT]}\n"
        + POOL.replace("{imageUri: us-docker.pkg.dev/p/r/i:1}", "{imageUri: 42}")
    )
    tuning = tmp_path / "tuning.yaml"
    tuning.write_text(
        "displayName: t\nmaxTrialCount: 2\nparallelTrialCount: 1\nstudySpec:\n"
        "  metrics: [{metricId: m, goal: MAXIMIZE}]\n"
        "  parameters: [{parameterId: p, discreteValueSpec: {values: 5}}]\n"
        "trialJobSpec:\n" + POOL
    )
    code, out = _validate(capsys, "--json", str(custom), str(tuning))
    assert code == 1
    fields = {p["field"] for p in json.loads(out) if p["code"] == "wrong-type"}
    assert fields == {
        "jobSpec.scheduling.strategy",
        "jobSpec.workerPoolSpecs[0].containerSpec.imageUri",
        "studySpec.parameters[0].discreteValueSpec.values",
    }


def test_validate_json_output_carries_yaml_dates_as_strings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(
        "displayName: 2024-01-01\nlabels: {when: 2024-01-01}\njobSpec:\n"
        + POOL.replace("replicaCount: 1", "replicaCount: 2024-01-01")
    )
    code, out = _validate(capsys, "--json", str(path))
    assert code == 1
    problems = json.loads(out)
    assert [p["value"] for p in problems if p["code"] == "wrong-type"] == ["2024-01-01"]
    assert parse_yaml("d: 2024-01-01 10:00:00", source="t") == {"d": "2024-01-01 10:00:00"}


def test_validate_refuses_devices_fifos_folders_and_large_files_without_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "job.yaml"
    os.mkfifo(fifo)  # no writer: a plain open() would wait for one forever
    large = tmp_path / "large.json"
    large.write_text("[" + "0," * (1 << 20) + "0]")
    cases = {
        "/dev/zero": "a character device",
        str(fifo): "a FIFO",
        str(tmp_path): "a folder",
        str(large): "larger than 1048576 bytes",
        str(tmp_path / "missing.yaml"): "No such file",
    }
    for path, expected in cases.items():
        with pytest.raises(LoadError, match=expected):
            load_file(path)
    code, out = _validate(capsys, *cases)
    assert code == 1
    for path, expected in cases.items():
        assert f"{path}: error: (file)" in out and expected in out
    assert out.count("INVALID") == len(cases)


def test_validate_names_the_file_once_with_the_loader_s_alternative(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    self_alias = tmp_path / "self.yaml"
    self_alias.write_text("a: &a [*a]\n")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 1000 + "]" * 1000)
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(ALIAS_BOMB)
    cases = {
        "/dev/zero": "pass a regular JSON or YAML file of at most 1048576 bytes",
        str(self_alias): "instead of using YAML anchors and aliases",
        str(bomb): "instead of using YAML anchors and aliases",
        str(deep): "flatten the nesting",
    }
    code, out = _validate(capsys, *cases)
    assert code == 1
    lines = [line for line in out.splitlines() if "INVALID" not in line]
    assert len(lines) == len(cases)
    for line, (path, alternative) in zip(lines, cases.items(), strict=True):
        assert line.startswith(f"{path}: error: (file)") and line.count(path) == 1, line
        assert alternative in line.partition("Valid alternatives: ")[2], line
        assert "fix the syntax" not in line


def test_templates_from_devices_fifos_and_bombs_are_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "pipeline.yaml"
    os.mkfifo(fifo)
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(ALIAS_BOMB.replace("jobSpec: *i", "root: *i\npipelineInfo: {name: x}"))
    for path in ("/dev/zero", fifo, bomb):
        with pytest.raises(TemplateError, match="cannot read a compiled pipeline"):
            load_pipeline_spec(path)
    with pytest.raises(UploadError, match="a FIFO"):
        read_template(fifo)


def test_param_json_is_bounded_by_the_same_loader() -> None:
    definitions = {"shops": {"parameterType": "LIST"}, "spec": {"parameterType": "STRUCT"}}
    with pytest.raises(ParameterError) as raised:
        parse_overrides(["shops=" + "[" * 999 + "]" * 999, 'spec={"a": -Infinity}'], definitions)
    assert "nested more than 64" in raised.value.problems[0]
    assert "-Infinity is not allowed" in raised.value.problems[1]
    assert parse_json('{"a": [1, {"b": null}]}', source="t") == {"a": [1, {"b": None}]}


def test_validate_reports_a_file_with_a_nul_and_goes_on_to_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The YAML reader refuses NUL and control characters as it is built (a ReaderError).
    nul = tmp_path / "nul.yaml"
    nul.write_text("displayName: x\x00\n")
    good = tmp_path / "good.yaml"
    good.write_text("displayName: t\njobSpec:\n" + POOL)
    code, out = _validate(capsys, str(nul), str(good))
    assert code == 1
    assert out.splitlines()[0].startswith(f"{nul}: error: (file) is not valid YAML:")
    assert f"{nul}: INVALID (1 error(s)" in out and f"{good}: OK" in out


def test_upload_refuses_a_template_with_a_control_character_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    template = tmp_path / "pipeline.yaml"
    template.write_text("pipelineInfo: {name: x}\nroot: {}\x1b\n")
    code = main(["upload", str(template), "--registry-dir", str(tmp_path / "registry")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.splitlines() == [
        f"upload: {template}: cannot read a compiled pipeline: {template} is not valid YAML: "
        'unacceptable character #x001b: special characters are not allowed in "<byte string>", '
        "position 32"
    ]
    assert not (tmp_path / "registry").exists()
