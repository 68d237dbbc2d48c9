"""The kfp adapter: one version check in front of every use of kfp.local's internals."""

from __future__ import annotations

import datetime as dt
import io
import tomllib
from pathlib import Path

import pytest
from kfp.local import placeholder_utils
from packaging.requirements import Requirement

from tests.import_rules import REPO
from vertex_retrain.backends.local.kfp_adapter import support
from vertex_retrain.backends.local.kfp_adapter.placeholders import (
    CREATE_TIME,
    LOCAL_PROJECT,
    SCHEDULE_TIME,
    local_placeholders,
)
from vertex_retrain.backends.local.kfp_adapter.session import kfp_local_session
from vertex_retrain.backends.local.kfp_adapter.support import (
    UnsupportedKfpError,
    check_kfp_version,
    supported_kfp,
)
from vertex_retrain.cli.local_run import run_pipeline_locally


def test_supported_kfp_is_the_range_pyproject_declares() -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    (kfp,) = [
        Requirement(line)
        for line in declared["project"]["dependencies"]
        if Requirement(line).name == "kfp"
    ]
    assert supported_kfp() == kfp.specifier


@pytest.mark.parametrize("version", ["2.17.0", "2.17.3", "2.17.99"])
def test_check_kfp_version_accepts_the_supported_minor(version: str) -> None:
    check_kfp_version(version)


@pytest.mark.parametrize("version", ["2.16.9", "2.18.0", "3.0.0", "none", "not-a-version"])
def test_check_kfp_version_refuses_others_naming_version_range_and_fix(version: str) -> None:
    with pytest.raises(UnsupportedKfpError) as refused:
        check_kfp_version(version)
    message = str(refused.value)
    assert f"kfp {version} is installed" in message
    assert str(supported_kfp()) in message
    assert "pip install 'kfp" in message


def test_kfp_local_session_patches_nothing_for_an_unsupported_kfp(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(support, "installed_kfp", lambda: "2.18.0")
    original = placeholder_utils.resolve_individual_placeholder
    with pytest.raises(UnsupportedKfpError), kfp_local_session(None, reuse=True, created=_NOON):
        raise AssertionError("the session must not start")
    assert placeholder_utils.resolve_individual_placeholder is original


_NOON = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)


def test_local_placeholders_resolve_times_and_cloud_then_restore() -> None:
    original = placeholder_utils.resolve_individual_placeholder
    with local_placeholders(_NOON):
        patched = placeholder_utils.resolve_individual_placeholder
        assert patched is not original
        resolved = patched(
            f"{CREATE_TIME}|{SCHEDULE_TIME}|{{{{$.pipeline_google_cloud_project_id}}}}",
            executor_input_dict={"inputs": {}, "outputs": {"outputFile": "/tmp/o"}},
            pipeline_resource_name="run",
            pipeline_root="/tmp",
            pipeline_job_id="1",
            task_resource_name="t",
            pipeline_task_id="2",
        )
    assert resolved == f"2026-03-02T12:00:00.000000Z||{LOCAL_PROJECT}"
    assert placeholder_utils.resolve_individual_placeholder is original


def test_run_pipeline_locally_refuses_an_unsupported_kfp_before_anything_runs(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(support, "installed_kfp", lambda: "2.18.0")
    ran: list[str] = []
    console = io.StringIO()
    outcome = run_pipeline_locally(lambda **_: ran.append("ran"), {}, console=console)
    assert not ran
    assert outcome.refused is not None and "kfp 2.18.0 is installed" in outcome.refused
    assert console.getvalue().startswith("ERROR: kfp 2.18.0 is installed")
    assert not (root / "pipeline-root").exists()
