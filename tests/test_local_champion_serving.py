"""A run stopped between register (the champion alias moved) and deploy (traffic not moved):
``history`` says the champion is not deployed, and the next local run moves the alias back to
the version the endpoint serves before it starts.

No model server runs here: the endpoint's deployed models are rows of the local registry
database, as a deploy commits them, and the interrupted deploy is a backend that raises.
"""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import pytest

from vertex_retrain.backends.base import DeploymentOutcome, DeploySpec
from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
from vertex_retrain.backends.local.model_registry.registry_records import model_id_for
from vertex_retrain.backends.local.model_registry.weeks_on_record import RunHistory
from vertex_retrain.backends.local.serving.champion_serving import champion_not_serving
from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints, _apply_split
from vertex_retrain.backends.local.storage import to_local_path
from vertex_retrain.cli.history_command import cli_history
from vertex_retrain.cli.local_run import _reconcile
from vertex_retrain.rules.traffic import allocate
from vertex_retrain.run_record import RunRecord
from vertex_retrain.steps.deploy import DeploymentRequest, deploy
from vertex_retrain.steps.register import RegisteredVersion, RegistrationRequest, register

MODEL = "recs"
ENDPOINT = "recs-endpoint"


def _register(run: str) -> RegisteredVersion:
    uri = f"gs://bkt/models/{run}"
    folder = to_local_path(uri)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.json").write_text("{}")
    request = RegistrationRequest(
        backend="local", artifact_uri=uri, display_name=MODEL, serving_image_uri="img",
        make_champion=True, pipeline_run=run,
    )  # fmt: skip
    return register(request)


def _serve(version: str, share: int = 100, endpoint: str = ENDPOINT) -> None:
    """Records a deployed model of ``version`` with ``share`` of the traffic, the others
    sharing the rest, as a deploy commits it."""
    endpoints = LocalEndpoints()
    current = endpoints.get_or_create(endpoint)
    with endpoints.db.write() as connection:
        model_id = model_id_for(connection, MODEL)
        cursor = connection.execute(
            "INSERT INTO deployed_models (endpoint_id, model_id, version_id, traffic, "
            "predict_route, health_route, sample_instances_json, deployed_at) "
            "VALUES (?, ?, ?, 0, '/predict', '/health', '[]', 'now')",
            (int(current.endpoint_id), model_id, int(version)),
        )
        split = allocate(current.traffic_split, str(cursor.lastrowid), share)
        _apply_split(connection, current.endpoint_id, split, "test")


class _InterruptedDeploy:
    """A backend whose deploy is interrupted (Ctrl-C) before anything moves."""

    name = "local"

    def deploy(self, spec: DeploySpec) -> DeploymentOutcome:
        raise KeyboardInterrupt


def _stopped_between_register_and_deploy() -> RegisteredVersion:
    """Week 1 promoted and deployed version 1; week 2's run stops once version 2 is
    registered as champion, in its deploy step."""
    _serve(_register("run-1").version_id)
    version = _register("run-2")
    request = DeploymentRequest(
        backend="local", model_resource_name=version.resource_name,
        model_version_id=version.version_id, endpoint_display_name=ENDPOINT,
    )  # fmt: skip
    with pytest.raises(KeyboardInterrupt):
        deploy(request, backend=_InterruptedDeploy())  # type: ignore[arg-type]
    return version


def _aliases() -> dict[str, list[str]]:
    return {v.version_id: sorted(v.aliases) for v in ModelRegistry().list_versions(MODEL)}


def test_champion_not_serving_finds_the_alias_a_stopped_deploy_left_moved(root: Path) -> None:
    _stopped_between_register_and_deploy()
    assert _aliases() == {"1": [], "2": ["champion", "default"]}  # the state left
    found = champion_not_serving(MODEL)
    assert found is not None and (found.champion, found.serving) == ("2", "1")
    assert found.line() == (
        "champion version 2 of 'recs' is not deployed: endpoint 'recs-endpoint' sends 100% to "
        "deployed model id 1 (version 1) (a run stopped or failed between registering it and "
        "deploying it); the next local run of 'recs' moves 'champion' back to version 1 "
        "before it starts"
    )


@pytest.mark.parametrize(
    ("serving", "mismatch"),
    [
        ([("2", 100)], False),  # the deploy finished
        ([("1", 100), ("2", 10)], False),  # a canary: the champion serves a share
        ([("1", 100), ("2", 0)], False),  # deployed without traffic, as a person chose
        ([("1", 100)], True),  # never deployed: the stopped run's state
        ([], False),  # never deployed: no endpoint serves the model
    ],
    ids=["deployed", "canary", "no-traffic", "not-deployed", "no-endpoint"],
)
def test_champion_not_serving_needs_a_champion_that_is_not_deployed(
    root: Path, serving: list[tuple[str, int]], mismatch: bool
) -> None:
    _register("run-1")
    _register("run-2")
    for version, share in serving:
        _serve(version, share)
    assert (champion_not_serving(MODEL) is not None) is mismatch


def test_champion_not_serving_leaves_a_model_of_two_endpoints_alone(root: Path) -> None:
    _stopped_between_register_and_deploy()
    _serve("1", endpoint="other-endpoint")
    assert champion_not_serving(MODEL) is None


def test_local_run_reconcile_moves_the_champion_back_to_the_serving_version(root: Path) -> None:
    _stopped_between_register_and_deploy()
    console = io.StringIO()
    _reconcile(root, console, MODEL, "")
    assert console.getvalue() == (
        "reconciled: 'champion' of 'recs' moved back from version 2, which is not deployed (a "
        "run stopped or failed between registering it and deploying it), to version 1, which "
        "endpoint 'recs-endpoint' serves\n"
    )
    assert _aliases() == {"1": ["champion", "default"], "2": []}
    assert champion_not_serving(MODEL) is None
    again = io.StringIO()
    _reconcile(root, again, MODEL, "")
    assert again.getvalue() == ""


def test_local_run_reconcile_uses_the_run_s_champion_alias(root: Path) -> None:
    _stopped_between_register_and_deploy()
    console = io.StringIO()
    _reconcile(root, console, MODEL, "best")  # no version holds 'best': nothing to say
    assert console.getvalue() == "" and _aliases()["2"] == ["champion", "default"]


def _history(**options: Any) -> argparse.Namespace:
    return argparse.Namespace(model=MODEL, no_plot=True, **options)


def test_history_says_a_champion_is_not_deployed(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _stopped_between_register_and_deploy()
    RunHistory().record(
        RunRecord(run="run-1", model=MODEL, backend="local", state="SUCCEEDED", as_of="2026-01-05")
    )
    out = io.StringIO()
    assert cli_history(_history(), out) == 0
    assert (
        out.getvalue().splitlines()[-1].startswith("champion version 2 of 'recs' is not deployed")
    )
    as_json = io.StringIO()
    assert cli_history(_history(json=True), as_json) == 0
    assert json.loads(as_json.getvalue())[0]["run"] == "run-1"
    assert "champion version 2 of 'recs' is not deployed" in capsys.readouterr().err
    _reconcile(root, io.StringIO(), MODEL, "")
    quiet = io.StringIO()
    assert cli_history(_history(), quiet) == 0
    assert "not deployed" not in quiet.getvalue()


def test_history_reads_the_champion_of_the_db_it_is_given(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _stopped_between_register_and_deploy()
    RunHistory().record(RunRecord(run="run-1", model=MODEL, backend="local", state="SUCCEEDED"))
    copy = tmp_path / "copy.db"
    copy.write_bytes((root / "registry.db").read_bytes())
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path / "elsewhere"))  # an empty root
    out = io.StringIO()
    assert cli_history(_history(db=str(copy)), out) == 0
    assert "champion version 2 of 'recs' is not deployed" in out.getvalue()


def test_local_run_reconcile_makes_no_registry_and_leaves_a_broken_one_to_the_run(
    root: Path,
) -> None:
    console = io.StringIO()
    _reconcile(root, console, MODEL, "")
    assert not (root / "registry.db").exists()
    (root / "registry.db").write_bytes(b"not a database" * 100)
    _reconcile(root, console, MODEL, "")  # the run's register step reports it
    assert console.getvalue() == ""
