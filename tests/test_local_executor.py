"""The local CustomJob executor, run for real: replicas are processes on this machine."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from vertex_retrain.backends.local.environments.build_index import ImageNotBuiltError
from vertex_retrain.backends.local.environments.builder import build_container_image
from vertex_retrain.backends.local.jobs.executor import CANCELLED, FAILED, SUCCEEDED, run_custom_job
from vertex_retrain.backends.local.jobs.job_payload import JobSpecError
from vertex_retrain.backends.local.jobs.pool_launch import PoolLaunchError

JOBS = Path(__file__).parent / "data" / "local_jobs"
REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


@pytest.fixture
def image(root: Path) -> str:
    return build_container_image(JOBS, image_uri="us-docker.pkg.dev/p/r/jobs:v1").uri


def pool(image: str, args: list[str], probe: Path, replicas: int = 1) -> dict[str, Any]:
    return {
        "machineSpec": {"machineType": "n1-standard-4"},
        "replicaCount": replicas,
        "containerSpec": {
            "imageUri": image,
            "args": args,
            "env": [{"name": "PROBE_DIR", "value": str(probe)}],
        },
    }


def job(*pools: dict[str, Any], **scheduling: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "workerPoolSpecs": list(pools),
        "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/out"},
    }
    if scheduling:
        spec["scheduling"] = scheduling
    return {"displayName": "test job", "jobSpec": spec}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def wait_dead(pids: list[int], seconds: float = 5.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def recorded_pids(probe: Path) -> list[int]:
    return [int(x) for f in probe.glob("pids-*.txt") for x in f.read_text().split()]


def test_run_custom_job_two_pools_three_replicas_get_vertex_environment(
    root: Path, image: str, tmp_path: Path
) -> None:
    probe = tmp_path / "probe"
    lines: list[str] = []
    result = run_custom_job(
        job(
            pool(image, ["env_probe.py", "--lr=0.1"], probe),
            pool(image, ["env_probe.py"], probe, 2),
        ),
        on_log=lines.append,
        extra_env={"PROBE_EXTRA": "extra"},
    )
    assert result.state == SUCCEEDED, result.error
    seen = {f.stem: json.loads(f.read_text()) for f in probe.glob("workerpool*.json")}
    assert sorted(seen) == ["workerpool0-0", "workerpool1-0", "workerpool1-1"]
    envs = {name: record["env"] for name, record in seen.items()}
    cluster = json.loads(envs["workerpool0-0"]["CLUSTER_SPEC"])["cluster"]
    assert len(cluster["workerpool0"]) == 1 and len(cluster["workerpool1"]) == 2
    hosts = cluster["workerpool0"] + cluster["workerpool1"]
    assert len(set(hosts)) == 3 and all(h.startswith("127.0.0.1:") for h in hosts)
    for name, env in envs.items():
        pool_type, index = name.split("-")
        assert env["AIP_MODEL_DIR"] == "gs://bkt/out/model/"
        assert env["AIP_CHECKPOINT_DIR"] == "gs://bkt/out/checkpoints/"
        assert env["AIP_TENSORBOARD_LOG_DIR"] == "gs://bkt/out/logs/"
        spec = json.loads(env["CLUSTER_SPEC"])
        assert spec["cluster"] == cluster and spec["environment"] == "cloud"
        assert spec["task"] == {"type": pool_type, "index": int(index)}
        assert spec["job"]["workerPoolSpecs"][1]["replicaCount"] == 2
        tf = json.loads(env["TF_CONFIG"])
        assert tf["cluster"] == {"chief": cluster["workerpool0"], "worker": cluster["workerpool1"]}
        assert tf["task"]["type"] == ("chief" if pool_type == "workerpool0" else "worker")
        assert env["MASTER_ADDR"] == "127.0.0.1"
        assert env["MASTER_PORT"] == cluster["workerpool0"][0].split(":")[1]
        assert env["WORLD_SIZE"] == "3"
        assert env["GCS_FUSE_ROOT"] == str(root / "gcs")
        assert env["CLOUD_ML_TRIAL_ID"] is None
        assert env["PROBE_EXTRA"] == "extra"
    assert sorted(env["RANK"] for env in envs.values()) == ["0", "1", "2"]
    # Each replica a temporary folder of its own in the job's, as each Vertex replica has a
    # machine's /tmp, and cloudml-hypertune's metric file in it, not the host's /tmp/hypertune.
    for name, env in envs.items():
        assert env["TMPDIR"] == str(result.job_dir / "tmp" / name)
        assert env["CLOUD_ML_HP_METRIC_FILE"] == str(
            result.job_dir / "tmp" / name / "hypertune" / "output.metrics"
        )
    assert not (result.job_dir / "tmp").exists()
    assert envs["workerpool0-0"]["RANK"] == "0"
    assert seen["workerpool0-0"]["argv"] == ["--lr=0.1"]
    assert "[workerpool1-1] probe workerpool1-1 done" in lines
    assert "probe workerpool1-1 done" in result.log_files["workerpool1-1"].read_text()
    assert result.model_dir == "gs://bkt/out/model/"
    assert result.model_path == root / "gcs" / "bkt" / "out" / "model"
    state = json.loads((result.job_dir / "state.json").read_text())
    assert state["state"] == SUCCEEDED


def test_run_custom_job_trial_id_reaches_environment_and_task(
    root: Path, image: str, tmp_path: Path
) -> None:
    probe = tmp_path / "probe"
    result = run_custom_job(
        job(pool(image, ["env_probe.py"], probe)), trial_id="7", on_log=lambda _: None
    )
    assert result.state == SUCCEEDED
    env = json.loads((probe / "workerpool0-0.json").read_text())["env"]
    assert env["CLOUD_ML_TRIAL_ID"] == "7"
    assert json.loads(env["CLUSTER_SPEC"])["task"]["trial"] == "7"
    assert json.loads(env["TF_CONFIG"])["task"] == {"type": "chief", "index": 0, "trial": "7"}


def test_run_custom_job_timeout_fails_and_stops_replicas(
    root: Path, image: str, tmp_path: Path
) -> None:
    probe = tmp_path / "probe"
    result = run_custom_job(
        job(pool(image, ["sleeper.py", "--ignore-term"], probe), timeout="1s"),
        grace_seconds=0.3,
        on_log=lambda _: None,
    )
    assert result.state == FAILED
    assert "scheduling.timeout (1s)" in (result.error or "")
    assert len(recorded_pids(probe)) == 2
    assert wait_dead(recorded_pids(probe)) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_run_custom_job_caller_signal_cancels_leaving_no_orphans(
    root: Path, image: str, tmp_path: Path, signum: int
) -> None:
    probe = tmp_path / "probe"
    payload = job(
        pool(image, ["sleeper.py"], probe), pool(image, ["sleeper.py", "--ignore-term"], probe)
    )
    driver = tmp_path / "driver.py"
    driver.write_text(
        textwrap.dedent(
            f"""
            import json
            from vertex_retrain.backends.local.jobs.executor import run_custom_job
            result = run_custom_job({payload!r}, grace_seconds=0.5, on_log=lambda _: None)
            print(json.dumps({{"state": result.state, "error": result.error}}))
            """
        )
    )
    caller = subprocess.Popen(
        [sys.executable, str(driver)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while len(recorded_pids(probe)) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        pids = recorded_pids(probe)
        assert len(pids) == 4, "replicas did not start"
        caller.send_signal(signum)
        out, _ = caller.communicate(timeout=30)
    finally:
        if caller.poll() is None:
            caller.kill()
            caller.communicate()  # reaps it and closes its stdout pipe
    assert json.loads(out.strip().splitlines()[-1])["state"] == CANCELLED
    assert wait_dead(pids) == []


@pytest.mark.parametrize(
    ("mode", "exit_code", "advice"),
    [
        ("sigkill", 137, "out of memory"),
        ("raise", 1, "ValueError: the loss became NaN at step 3"),
        ("exit:2", 2, "bad command-line arguments"),
        ("exit:127", 127, "command not found"),
    ],
)
def test_run_custom_job_failed_replica_reported_with_advice_and_others_stopped(
    root: Path, image: str, tmp_path: Path, mode: str, exit_code: int, advice: str
) -> None:
    probe = tmp_path / "probe"
    result = run_custom_job(
        job(
            pool(image, ["sleeper.py"], probe),
            pool(image, ["crash.py", f"--mode={mode}", "--delay=0.3"], probe),
        ),
        grace_seconds=1.0,
        on_log=lambda _: None,
    )
    assert result.state == FAILED
    assert result.failure is not None
    assert result.failure.replica == "workerpool1-0"
    assert result.failure.exit_code == exit_code
    assert advice in result.failure.advice
    assert f"about to fail with {mode}" in result.failure.log_tail
    assert (result.failure.signal == "SIGKILL") == (mode == "sigkill")
    assert wait_dead(recorded_pids(probe)) == []
    state = json.loads((result.job_dir / "state.json").read_text())
    assert state["failure"]["exit_code"] == exit_code


def test_run_custom_job_restart_on_worker_failure_restarts_whole_job(
    root: Path, image: str, tmp_path: Path
) -> None:
    payload = job(
        pool(image, ["sleeper.py"], tmp_path / "probe"),
        pool(image, ["crash.py", "--mode=exit:3", "--delay=0.2"], tmp_path / "probe"),
        restartJobOnWorkerRestart=True,
    )
    result = run_custom_job(payload, grace_seconds=0.3, on_log=lambda _: None)
    assert result.state == FAILED
    assert result.restarts == 6
    assert result.log_files["workerpool1-0"].read_text().count("about to fail") == 7


def test_run_custom_job_unbuilt_image_refused_with_what_would_work(root: Path) -> None:
    payload = job(pool("us-docker.pkg.dev/p/r/never-built:v1", [], root))
    with pytest.raises(ImageNotBuiltError, match=r"build_container component.*pythonPackageSpec"):
        run_custom_job(payload)
    assert not (root / "jobs").exists()


def test_run_custom_job_non_python_entrypoint_refused(root: Path, tmp_path: Path) -> None:
    context = tmp_path / "ctx"
    context.mkdir()
    (context / "Dockerfile").write_text('FROM ubuntu:22.04\nENTRYPOINT ["/bin/bash", "run.sh"]\n')
    uri = build_container_image(context, image_uri="us-docker.pkg.dev/p/r/bash:v1").uri
    with pytest.raises(PoolLaunchError, match="Python entrypoints only"):
        run_custom_job(job(pool(uri, [], tmp_path)))


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"foo": 1}, "expected a Vertex CustomJob"),
        ({"jobSpec": {"workerPoolSpecs": []}}, "1 to 4 worker pools"),
    ],
)
def test_run_custom_job_invalid_payload_refused_before_start(
    root: Path, payload: dict[str, Any], message: str
) -> None:
    with pytest.raises(JobSpecError, match=message):
        run_custom_job(payload)
    assert not (root / "jobs").exists()


def test_run_custom_job_primary_pool_with_two_replicas_refused(root: Path, image: str) -> None:
    with pytest.raises(JobSpecError, match="replicaCount must be 1"):
        run_custom_job(job(pool(image, ["env_probe.py"], root, replicas=2)))
