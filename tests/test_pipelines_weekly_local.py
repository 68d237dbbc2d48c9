"""weekly_retraining runs locally, end to end, through both branches of the champion gate."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from vertex_retrain.backends.local.endpoints import LocalEndpoints
from vertex_retrain.backends.local.registry import ModelRegistry
from vertex_retrain.backends.local.router import start_router
from vertex_retrain.cli.compiling import compile_to_dict, default_arguments
from vertex_retrain.cli.local_run import local_arguments, run_pipeline_locally
from vertex_retrain.pipelines import defaults
from vertex_retrain.pipelines.weekly_retraining import weekly_retraining

ROOT = Path(__file__).resolve().parent.parent
TINY = {
    "source_uri": str(ROOT / "trainer"),
    "epochs": 1,
    "batch_size": 256,
    "learning_rate": 0.01,
}


def _run(overrides: dict[str, Any]) -> Any:
    spec = compile_to_dict(weekly_retraining)
    arguments = local_arguments(default_arguments(spec), {**TINY, **overrides})
    with open("/dev/null", "w") as quiet:
        return run_pipeline_locally(weekly_retraining, arguments, console=quiet)


def _predict(endpoint: str) -> tuple[dict[str, int], list[Any]]:
    with start_router(endpoint) as router:
        request = urllib.request.Request(
            f"{router.url}/v1/endpoints/{endpoint}:predict",
            data=json.dumps({"instances": defaults.SAMPLE_INSTANCES}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return router.traffic_split(), json.loads(response.read())["predictions"]


@pytest.fixture(scope="module")
def local_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from trainer.data import generate
    from trainer.world import WorldConfig

    root = tmp_path_factory.mktemp("weekly-local")
    monkey = pytest.MonkeyPatch()
    monkey.setenv("VERTEX_LOCAL_ROOT", str(root))
    monkey.chdir(root)
    target = root / "gcs" / "drink-shops-ml" / "transactions"
    generate(WorldConfig(members=400, stores=8, weeks=8, seed=3), str(target))
    yield root
    LocalEndpoints().undeploy_all(defaults.ENDPOINT_DISPLAY_NAME)
    monkey.undo()


def test_weekly_retraining_first_run_registers_and_serves_a_champion(local_root: Path) -> None:
    outcome = _run({})
    assert outcome.succeeded, outcome.log_path.read_text()[-3000:]
    summary = outcome.summary
    assert summary is not None and summary["state"] == "SUCCEEDED"
    assert summary["decision"]["is_better"] is True
    champion = ModelRegistry().get_version(defaults.MODEL_DISPLAY_NAME, "champion")
    assert set(champion.aliases) == {"champion", "default"}
    assert champion.lineage.pipeline_run == summary["pipeline_run"]
    traffic, predictions = _predict(defaults.ENDPOINT_DISPLAY_NAME)
    assert list(traffic.values()) == [100]
    assert len(predictions) == 1 and predictions[0]["drinks"]
    assert summary["cost_on_vertex"]["on_demand"] > summary["cost_on_vertex"]["spot"] > 0


def test_weekly_retraining_worse_candidate_stays_challenger(local_root: Path) -> None:
    endpoints = LocalEndpoints()
    traffic_before = endpoints.get(defaults.ENDPOINT_DISPLAY_NAME).traffic_split
    champion_before = ModelRegistry().get_version(defaults.MODEL_DISPLAY_NAME, "champion")
    outcome = _run({"force_decision": "worse"})
    assert outcome.succeeded, outcome.log_path.read_text()[-3000:]
    assert outcome.summary is not None and outcome.summary["decision"]["is_better"] is False
    registry = ModelRegistry()
    versions = registry.list_versions(defaults.MODEL_DISPLAY_NAME)
    assert "challenger" in versions[-1].aliases
    assert registry.get_version(defaults.MODEL_DISPLAY_NAME, "champion") == champion_before
    assert endpoints.get(defaults.ENDPOINT_DISPLAY_NAME).traffic_split == traffic_before


def test_weekly_retraining_better_candidate_moves_alias_and_traffic(local_root: Path) -> None:
    old_champion = ModelRegistry().get_version(defaults.MODEL_DISPLAY_NAME, "champion")
    outcome = _run({"force_decision": "better"})
    assert outcome.succeeded, outcome.log_path.read_text()[-3000:]
    registry = ModelRegistry()
    new_champion = registry.get_version(defaults.MODEL_DISPLAY_NAME, "champion")
    assert new_champion.version_id != old_champion.version_id
    assert (
        "champion"
        not in registry.get_version(defaults.MODEL_DISPLAY_NAME, old_champion.version_id).aliases
    )
    endpoint = LocalEndpoints().get(defaults.ENDPOINT_DISPLAY_NAME)
    by_version = {m.model_version_id: m.traffic_percentage for m in endpoint.deployed_models}
    # The new champion takes all traffic; the previous one stays deployed for rollback.
    assert by_version[new_champion.version_id] == 100
    assert by_version[old_champion.version_id] == 0
    traffic, predictions = _predict(defaults.ENDPOINT_DISPLAY_NAME)
    assert sum(traffic.values()) == 100 and predictions[0]["drinks"]
