"""What a local run makes on a fresh clone: sample data (the trainer's own command line), the
training package, the source folder; and ``compile.py demo``'s data step, which reuses them."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from vertex_retrain.backends.local.storage import to_local_path
from vertex_retrain.cli import demo, local_setup
from vertex_retrain.pipelines import defaults

SMALL = {"members": 40, "stores": 5, "weeks": 3, "seed": 7}


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path / "root"))
    monkeypatch.setattr(local_setup, "SAMPLE_SCALE", SMALL)
    return tmp_path / "root"


def test_ensure_demo_data_writes_the_transactions_once(root: Path) -> None:
    out = io.StringIO()
    demo.ensure_demo_data(out)
    generation = to_local_path(defaults.TRANSACTIONS_URI) / "generation.json"
    assert json.loads(generation.read_text())["config"]["members"] == SMALL["members"]
    assert out.getvalue().count("\n") == 1 and "sample data generated at" in out.getvalue()
    again = io.StringIO()
    demo.ensure_demo_data(again)
    assert again.getvalue() == ""


def test_ensure_sample_data_reports_the_generator_failure_with_its_output(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_setup, "SAMPLE_SCALE", {**SMALL, "members": 0})
    with pytest.raises(local_setup.LocalSetupError, match=r"trainer\.data generate .*--members=0"):
        local_setup.ensure_sample_data(defaults.TRANSACTIONS_URI, io.StringIO())
    assert not (to_local_path(defaults.TRANSACTIONS_URI) / "generation.json").exists()


def test_ensure_trainer_package_builds_the_wheel_the_uri_names(root: Path) -> None:
    uri = "gs://drink-shops-ml/packages/vertex_retrain_trainer-1.0.0-py3-none-any.whl"
    out = io.StringIO()
    wheel = local_setup.ensure_trainer_package(uri, out)
    assert wheel == to_local_path(uri) and wheel.is_file()
    assert out.getvalue().startswith("training package built from")
    again = io.StringIO()
    local_setup.ensure_trainer_package(uri, again)
    assert again.getvalue() == ""


def test_ensure_trainer_package_refuses_a_uri_naming_another_wheel(root: Path) -> None:
    uri = "gs://b/packages/other-2.0-py3-none-any.whl"
    with pytest.raises(local_setup.LocalSetupError, match="--param package_uri=gs://b/packages/"):
        local_setup.ensure_trainer_package(uri, io.StringIO())


def test_prepare_local_run_points_an_empty_source_uri_at_the_clones_trainer(root: Path) -> None:
    out = io.StringIO()
    arguments = {
        "source_uri": defaults.SOURCE_URI,
        "transactions_uri": defaults.TRANSACTIONS_URI,
        "epochs": 1,
    }
    prepared = local_setup.prepare_local_run(arguments, out)
    assert prepared["source_uri"] == str(
        local_setup.REPO_ROOT / "examples" / "drink_shops" / "trainer"
    )
    assert prepared["epochs"] == 1 and arguments["source_uri"] == defaults.SOURCE_URI
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and "sample data generated" in lines[0] and "source_uri" in lines[1]


def test_prepare_local_run_leaves_local_paths_and_existing_data_alone(
    root: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere"
    out = io.StringIO()
    prepared = local_setup.prepare_local_run({"transactions_uri": str(missing)}, out)
    assert prepared == {"transactions_uri": str(missing)}
    assert out.getvalue() == "" and not missing.exists()
