"""The environment benchmarks run the trainer in: this checkout first, and cloudml-hypertune's
report and the temporary files kept in the bench cache rather than the fixed
``/tmp/hypertune/output.metrics`` and ``/tmp``."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.measure import python_env
from vertex_retrain.backends.local.jobs.job_sandbox import HYPERTUNE_FILE_VARIABLE as VARIABLE


def test_python_env_puts_the_hypertune_file_in_the_bench_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERTEX_RETRAIN_BENCH_DATA", str(tmp_path / "cache"))
    monkeypatch.delenv(VARIABLE, raising=False)
    assert python_env()[VARIABLE] == str(tmp_path / "cache" / "hypertune" / "output.metrics")


def test_python_env_keeps_a_hypertune_file_the_caller_chose(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERTEX_RETRAIN_BENCH_DATA", str(tmp_path / "cache"))
    monkeypatch.setenv(VARIABLE, str(tmp_path / "mine"))
    assert python_env()[VARIABLE] == str(tmp_path / "mine")


def test_python_env_puts_temporary_files_in_the_bench_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERTEX_RETRAIN_BENCH_DATA", str(tmp_path / "cache"))
    monkeypatch.delenv("TMPDIR", raising=False)
    assert python_env()["TMPDIR"] == str(tmp_path / "cache" / "tmp")
    assert (tmp_path / "cache" / "tmp").is_dir()  # made: tempfile ignores a missing TMPDIR


def test_python_env_keeps_a_temporary_folder_the_caller_chose(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERTEX_RETRAIN_BENCH_DATA", str(tmp_path / "cache"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "mine"))
    assert python_env()["TMPDIR"] == str(tmp_path / "mine")
