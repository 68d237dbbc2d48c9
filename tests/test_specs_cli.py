"""``compile.py validate``: exit codes, text report, --json, unreadable files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
JOBS = ROOT / "tests" / "data" / "jobs"


def _validate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "compile.py", "validate", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_compile_validate_accepts_valid_files() -> None:
    names = [
        "valid_custom_job.json",
        "valid_gcloud_config.yaml",
        "valid_snake_case.yaml",
        "valid_tuning_job.yaml",
    ]
    result = _validate(*(str(JOBS / n) for n in names))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count(": OK (0 error(s)") == 4


def test_compile_validate_reports_field_value_reason_and_alternatives() -> None:
    result = _validate(str(JOBS / "invalid_t4x3.yaml"))
    assert result.returncode == 1
    # A gcloud --config body is reported with its own paths (no "jobSpec." prefix).
    assert (
        "error: workerPoolSpecs[0].machineSpec.acceleratorCount = 3: NVIDIA_TESLA_T4 takes "
        "1, 2 or 4 GPUs per machine, never 3. Valid alternatives: acceleratorCount 2; "
        "acceleratorCount 4." in result.stdout
    )


def test_compile_validate_warnings_alone_exit_zero() -> None:
    result = _validate(str(JOBS / "warning_spot_no_checkpoint.yaml"))
    assert result.returncode == 0
    assert "warning: jobSpec.baseOutputDirectory" in result.stdout
    assert "n1-highmem-4" in result.stdout  # a machine big enough to feed the T4


def test_compile_validate_json_lists_problems() -> None:
    files = [JOBS / "invalid_v100_machine.json", JOBS / "invalid_tuning_grid.yaml"]
    result = _validate("--json", *(str(f) for f in files))
    assert result.returncode == 1
    problems = json.loads(result.stdout)
    keys = {"severity", "field", "value", "message", "alternatives"}
    assert all(keys <= set(p) for p in problems)
    by_field = {p["field"]: p for p in problems}
    machine = by_field["jobSpec.workerPoolSpecs[0].machineSpec.machineType"]
    assert machine["value"] == "n1-standard-32" and "acceleratorCount 4" in machine["alternatives"]
    assert "n1-standard-16 or smaller" in machine["alternatives"]
    assert by_field["jobSpec.workerPoolSpecs[0].replicaCount"]["severity"] == "error"
    assert (
        by_field["jobSpec.scheduling.maxWaitDuration"]["alternatives"][0] == "strategy FLEX_START"
    )
    assert by_field["parallelTrialCount"]["value"] == 8
    assert by_field["studySpec.parameters[0].doubleValueSpec"]["severity"] == "error"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("malformed.yaml", "is not valid YAML"),
        ("not_a_job.yaml", "expected a job definition (a mapping), got list"),
        ("missing.json", "cannot read"),
    ],
)
def test_compile_validate_reports_unreadable_files(name: str, expected: str) -> None:
    result = _validate("--json", str(JOBS / name))
    assert result.returncode == 1
    [problem] = json.loads(result.stdout)
    assert problem["field"] == "(file)" and expected in problem["message"]


def test_compile_validate_reports_bad_json_position(tmp_path: Path) -> None:
    bad = tmp_path / "job.json"
    bad.write_text('{"displayName": "x",, }', encoding="utf-8")
    result = _validate(str(bad))
    assert result.returncode == 1
    assert "is not valid JSON (line 1, column 21" in result.stdout
