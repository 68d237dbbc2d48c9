"""Fault injection into the register and deploy steps: a crash at every point, then a re-run.

Each crash point makes one registry or endpoint operation fail (before it runs, or after it
committed, so the step dies without recording that it finished); the step is then re-run as
a retried pipeline task would be. The registry and endpoint must end consistent: one version
per pipeline run, at most one `champion`, traffic summing to 100 over healthy servers, and no
server process that the endpoint does not know about. A router hammered during deploys must
answer every request.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from data.faults.support import TAG_VARIABLE, tagged_processes, wait_until_gone
from data.serving.support import ECHO_SERVER, build_echo_image, stop_all_servers

from vertex_retrain.backends.local.model_registry import registry as registry_module
from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
from vertex_retrain.backends.local.serving import endpoints as endpoints_module
from vertex_retrain.backends.local.serving import model_server
from vertex_retrain.backends.local.serving.endpoint_servers import _healthy
from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints
from vertex_retrain.backends.local.serving.router import start_router
from vertex_retrain.backends.local.storage import to_local_path
from vertex_retrain.steps.deploy import DeploymentRequest, deploy
from vertex_retrain.steps.register import RegisteredVersion, RegistrationRequest, register

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parent.parent
MODEL = "recs"
ENDPOINT = "recs-endpoint"


class InjectedCrashError(RuntimeError):
    """The fault a test injects."""


@pytest.fixture
def tag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh local root; servers started from here carry FAULT_TAG so orphans show up."""
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path / "root"))
    value = f"deploy-{tmp_path.name}-{os.getpid()}"
    monkeypatch.setenv(TAG_VARIABLE, value)
    yield value
    stop_all_servers(LocalEndpoints())
    wait_until_gone(value)


def _artifact(run: str, bias: int) -> str:
    uri = f"gs://bkt/models/{run}"
    folder = to_local_path(uri)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.json").write_text(json.dumps({"name": run, "bias": bias}))
    return uri


def _register(run: str, bias: int) -> RegisteredVersion:
    return register(
        RegistrationRequest(
            backend="local",
            artifact_uri=_artifact(run, bias),
            display_name=MODEL,
            serving_image_uri=build_echo_image(),
            serving_command=["python", str(ECHO_SERVER)],
            make_champion=True,
            sample_instances=[1, 2],
            pipeline_run=run,
        )
    )


def _deploy(version: RegisteredVersion, keep_last_n: int = 2) -> None:
    deploy(
        DeploymentRequest(
            backend="local",
            model_resource_name=version.resource_name,
            model_version_id=version.version_id,
            endpoint_display_name=ENDPOINT,
            traffic_percentage=100,
            keep_last_n=keep_last_n,
        )
    )


def _weekly_step(run: str, bias: int, keep_last_n: int = 2) -> None:
    _deploy(_register(run, bias), keep_last_n)


def _assert_consistent(
    runs: list[str], tag: str, orphans: frozenset[int] | set[int] = frozenset()
) -> None:
    versions = ModelRegistry().list_versions(MODEL)
    assert [v.lineage.pipeline_run for v in versions] == runs, "duplicate or missing version"
    champions = [v for v in versions if "champion" in v.aliases]
    assert [v.version_id for v in champions] == [versions[-1].version_id]
    assert sum("default" in v.aliases for v in versions) == 1
    endpoint = LocalEndpoints().get(ENDPOINT)
    assert sum(endpoint.traffic_split.values()) == 100
    serving = [m for m in endpoint.deployed_models if m.traffic_percentage > 0]
    assert all(_healthy(m) for m in serving)
    assert [m.model_version_id for m in serving] == [champions[0].version_id]
    recorded = _groups(endpoint)
    assert orphans.isdisjoint(recorded)
    alive = {_group(pid) for pid in wait_until_gone_except(tag, recorded)}
    assert alive == recorded, "orphaned server process"


def _group(pid: int) -> int | None:
    """The process group of `pid`: a server runs in the group of its recorded keeper."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[2])
    except (OSError, IndexError, ValueError):
        return None


def _groups(endpoint: Any) -> set[int | None]:
    return {m.pid for m in endpoint.deployed_models}


def wait_until_gone_except(tag: str, keep: set[int | None]) -> dict[int, dict[str, str]]:
    """Tagged processes after those outside the groups `keep` had a moment to exit."""
    for _ in range(200):
        alive = tagged_processes(tag)
        if {_group(pid) for pid in alive} <= keep:
            return alive
        threading.Event().wait(0.05)
    return tagged_processes(tag)


def _fail_before(target: Any, name: str) -> Callable[..., Any]:
    def crash(*args: Any, **kwargs: Any) -> Any:
        raise InjectedCrashError(f"crash before {name}")

    return crash


def _fail_after(target: Any, name: str) -> Callable[..., Any]:
    original = getattr(target, name)

    def crash(*args: Any, **kwargs: Any) -> Any:
        original(*args, **kwargs)
        raise InjectedCrashError(f"crash after {name}")

    return crash


CRASH_POINTS = {
    "before-upload": (ModelRegistry, "upload_version", _fail_before),
    "after-upload": (ModelRegistry, "upload_version", _fail_after),
    "during-alias-move": (registry_module, "move_aliases", _fail_before),
    "before-endpoint-deploy": (LocalEndpoints, "deploy", _fail_before),
    "server-started-before-traffic-shift": (endpoints_module, "_apply_split", _fail_before),
    "after-traffic-shift": (LocalEndpoints, "deploy", _fail_after),
    "during-undeploy-of-old-version": (LocalEndpoints, "undeploy", _fail_before),
    "after-old-version-undeployed": (LocalEndpoints, "undeploy", _fail_after),
}


@pytest.mark.parametrize("point", list(CRASH_POINTS))
def test_register_and_deploy_rerun_after_a_crash_ends_consistent(
    tag: str, point: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _weekly_step("run-1", 0)
    _weekly_step("run-2", 100)
    target, name, make = CRASH_POINTS[point]
    with monkeypatch.context() as patch:
        patch.setattr(target, name, make(target, name))
        with pytest.raises(InjectedCrashError):
            _weekly_step("run-3", 200)
    _weekly_step("run-3", 200)  # the retried task
    _assert_consistent(["run-1", "run-2", "run-3"], tag)
    assert len(LocalEndpoints().get(ENDPOINT).deployed_models) == 2  # keep_last_n


def _killed_deploy_step(version: RegisteredVersion, marker: Path, stall_in: str) -> int:
    """Runs the deploy step in a process that stalls at `stall_in`, then SIGKILLs it.

    `stall_in` is `start_checked_server` (the server passed its checks, not yet released
    from its keeper) or `release` (released, traffic not committed). Returns the server's
    recorded pid (its keeper, the leader of its process group).
    """
    script = textwrap.dedent(
        f"""
        import pathlib, time
        from vertex_retrain.backends.local import lifeline
        from vertex_retrain.backends.local.serving import model_server
        from vertex_retrain.steps.deploy import DeploymentRequest, deploy
        target = model_server if {stall_in!r} == "start_checked_server" else lifeline
        original = getattr(target, {stall_in!r})
        def run_then_stall(*args, **kwargs):
            result = original(*args, **kwargs)
            pid = result.pid if result is not None else args[0]
            pathlib.Path({str(marker)!r}).write_text(str(pid))
            time.sleep(600)
        setattr(target, {stall_in!r}, run_then_stall)
        deploy(DeploymentRequest(backend="local", model_resource_name={version.resource_name!r},
            model_version_id={version.version_id!r}, endpoint_display_name={ENDPOINT!r}))
        """
    )
    step = subprocess.Popen(
        [sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": str(REPO)}
    )
    try:
        for _ in range(600):
            if marker.is_file() or step.poll() is not None:
                break
            threading.Event().wait(0.05)
        assert marker.is_file(), "the step never got that far"
    finally:
        step.kill()
        step.wait()
    return int(marker.read_text())


def test_deploy_step_killed_before_release_takes_its_server_with_it(
    tag: str, tmp_path: Path
) -> None:
    """The step dies (SIGKILL) while its new server is up but has no traffic yet."""
    _weekly_step("run-1", 0)
    version = _register("run-2", 100)
    orphan = _killed_deploy_step(version, tmp_path / "server-started", "start_checked_server")
    # The keeper got the parent-death signal and stopped the server: no one else did.
    left = wait_until_gone_except(tag, _groups(LocalEndpoints().get(ENDPOINT)))
    assert orphan not in {_group(pid) for pid in left}, "the server outlived its deploy step"
    assert LocalEndpoints().get(ENDPOINT).traffic_split == {"1": 100}  # nothing committed
    _deploy(version)  # the retried task
    _assert_consistent(["run-1", "run-2"], tag)


def test_deploy_step_killed_after_release_is_cleaned_up_by_the_rerun(
    tag: str, tmp_path: Path
) -> None:
    """Released from its keeper, not yet committed: the pending record names the server."""
    _weekly_step("run-1", 0)
    version = _register("run-2", 100)
    orphan = _killed_deploy_step(version, tmp_path / "released", "release")
    records = list((Path(os.environ["VERTEX_LOCAL_ROOT"]) / "serving" / "pending").iterdir())
    assert len(records) == 1 and json.loads(records[0].read_text())["server"]["pid"] == orphan
    assert model_server.is_running(orphan, None)  # released: it outlived the step
    assert LocalEndpoints().get(ENDPOINT).traffic_split == {"1": 100}
    _deploy(version)  # the retried task stops it first
    assert not records[0].exists()
    _assert_consistent(["run-1", "run-2"], tag, orphans={orphan})
    assert not model_server.is_running(orphan, None)


@pytest.mark.parametrize("keep_last_n", [2, 3])
def test_router_answers_every_request_while_new_versions_are_deployed(
    tag: str, keep_last_n: int
) -> None:
    _weekly_step("run-1", 0)
    failures: list[str] = []
    answered: list[str] = []
    done = threading.Event()
    body = json.dumps({"instances": [1, 2]}).encode()

    with start_router(ENDPOINT) as router:

        def hammer() -> None:
            connection = http.client.HTTPConnection("127.0.0.1", router.port, timeout=30)
            while not done.is_set() and len(answered) + len(failures) < 20_000:
                try:
                    connection.request("POST", f"/v1/endpoints/{ENDPOINT}:predict", body)
                    response = connection.getresponse()
                    answer = response.read()
                except (OSError, http.client.HTTPException) as error:
                    failures.append(f"{type(error).__name__}: {error}")
                    connection.close()
                    continue
                if response.status != 200:
                    failures.append(f"HTTP {response.status}: {answer[:300]!r}")
                else:
                    answered.append(json.loads(answer)["modelVersionId"])
            connection.close()

        client = threading.Thread(target=hammer, daemon=True)
        client.start()
        try:
            for number, run in enumerate(["run-2", "run-3", "run-4"], start=2):
                _weekly_step(run, 100 * number, keep_last_n)
        finally:
            done.set()
            client.join(timeout=60)
    assert failures == []
    assert set(answered) == {"1", "2", "3", "4"}  # requests spanned every deploy
    _assert_consistent(["run-1", "run-2", "run-3", "run-4"], tag)
    assert len(LocalEndpoints().get(ENDPOINT).deployed_models) == keep_last_n
