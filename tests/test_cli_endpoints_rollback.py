"""`vertex-retrain endpoints rollback NAME`: the split from before the latest deployment."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from data.serving.support import register_echo, stop_all_servers

from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints
from vertex_retrain.cli import main as cli
from vertex_retrain.invocation import ENVIRONMENT_VARIABLE

pytestmark = pytest.mark.slow


@pytest.fixture
def endpoints(registry: ModelRegistry, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalEndpoints]:
    monkeypatch.delenv(ENVIRONMENT_VARIABLE, raising=False)
    manager = LocalEndpoints(registry.db.path)
    yield manager
    stop_all_servers(manager)


def _aliases(registry: ModelRegistry) -> dict[str, list[str]]:
    return {v.version_id: sorted(v.aliases) for v in registry.list_versions("recs")}


def test_endpoints_rollback_restores_the_split_before_the_latest_deployment(
    registry: ModelRegistry, endpoints: LocalEndpoints, capsys: pytest.CaptureFixture[str]
) -> None:
    register_echo(registry, "a", 0)
    register_echo(registry, "b", 1)
    registry.set_alias("recs", "champion", "2")
    endpoints.get_or_create("shop recs")
    first = endpoints.deploy("shop recs", "recs", "1").deployed_model_id
    second = endpoints.deploy("shop recs", "recs", "2", traffic_percentage=70).deployed_model_id
    aliases = _aliases(registry)
    assert cli.main(["endpoints", "rollback", "shop recs"]) == 0
    assert capsys.readouterr().out == (
        "endpoint shop recs: rolled back to the split before its latest deployment: traffic "
        f"now 100% to deployed model id {first} (version 1) (was 70% to deployed model id "
        f"{second} (version 2), 30% to deployed model id {first} (version 1)); model aliases "
        "unchanged\n"
    )
    endpoint = endpoints.get("shop recs")
    assert endpoint.traffic_split == {first: 100, second: 0}
    assert {m.deployed_model_id for m in endpoint.deployed_models} == {first, second}
    assert _aliases(registry) == aliases  # only traffic moved
    # Again: the same split, said so, and nothing recorded.
    history = len(endpoints.traffic_history("shop recs"))
    assert cli.main(["endpoints", "rollback", "shop recs"]) == 0
    assert capsys.readouterr().out == (
        f"endpoint shop recs: traffic already 100% to deployed model id {first} (version 1); "
        "nothing changed\n"
    )
    assert len(endpoints.traffic_history("shop recs")) == history
    assert cli.main(["endpoints", "--json"]) == 0
    shares = {r["version"]: r["traffic_percentage"] for r in json.loads(capsys.readouterr().out)}
    assert shares == {"1": 100, "2": 0}


def test_endpoints_rollback_refuses_an_unknown_endpoint_or_nothing_to_go_back_to(
    registry: ModelRegistry, endpoints: LocalEndpoints, capsys: pytest.CaptureFixture[str]
) -> None:
    register_echo(registry, "a", 0)
    assert cli.main(["endpoints", "rollback", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "nope" in err
    endpoints.get_or_create("ep")
    only = endpoints.deploy("ep", "recs", "1").deployed_model_id
    assert cli.main(["endpoints", "rollback", "ep"]) == 1
    err = capsys.readouterr().err
    assert "nothing to roll back to" in err and err.count("\n") == 1
    assert endpoints.get("ep").traffic_split == {only: 100}


def test_endpoints_rollback_uses_the_registry_db_option(
    registry: ModelRegistry,
    endpoints: LocalEndpoints,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    register_echo(registry, "a", 0)
    register_echo(registry, "b", 1)
    endpoints.get_or_create("ep")
    first = endpoints.deploy("ep", "recs", "1").deployed_model_id
    endpoints.deploy("ep", "recs", "2")
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path / "another-root"))
    assert cli.main(["endpoints", "rollback", "ep"]) == 2  # not in this root's registry
    capsys.readouterr()
    database = str(registry.db.path)
    assert cli.main(["endpoints", "rollback", "ep", "--db", database]) == 0
    assert LocalEndpoints(database).get("ep").traffic_split[first] == 100
