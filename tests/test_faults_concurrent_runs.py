"""Two weekly-retraining runs at once on one local root: the second is refused clearly.

Without the refusal both runs judged their candidate against the same (absent) champion and
both were promoted and deployed, an outcome no sequence of runs can give. The runs are real
processes running the whole pipeline with kfp.local on tiny data.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.examples import DRINK_SHOPS, example_module
from trainer.data import generate
from trainer.world import WorldConfig
from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
from vertex_retrain.backends.local.serving.endpoint_servers import stop_servers
from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints
from vertex_retrain.backends.local.storage import to_local_path
from vertex_retrain.cli.local_run import RunConflictError, exclusive_model_run

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parent.parent
CHAIN = example_module(DRINK_SHOPS, "pipelines")
RUN_WEEKLY = Path(__file__).parent / "data" / "faults" / "run_weekly.py"
LOCK = f"locks/run-{CHAIN.MODEL}.lock"


def _start_run(root: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(RUN_WEEKLY)],
        env={**os.environ, "VERTEX_LOCAL_ROOT": str(root), "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _result(run: subprocess.Popen[str]) -> dict[str, Any]:
    try:
        out, err = run.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        run.kill()
        run.communicate()  # reaps it and closes its pipes
        raise
    assert out.strip(), err[-3000:]
    loaded: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return loaded


def test_second_concurrent_weekly_run_is_refused_and_first_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(root))
    generate(
        WorldConfig(members=200, stores=10, weeks=8, seed=1),
        str(to_local_path(CHAIN.DATA_URI)),
    )
    # `with`: however the test ends, the first run's pipes are closed and it is reaped.
    with _start_run(root) as first:
        try:
            lock = root / LOCK
            deadline = time.monotonic() + 120
            while not (lock.is_file() and lock.read_text().startswith("pid")):
                assert first.poll() is None and time.monotonic() < deadline, "first run never began"
                time.sleep(0.05)
            second = _result(_start_run(root))
            assert first.poll() is None, "the second run waited for the first instead of refusing"
            outcome = _result(first)
        finally:
            if first.poll() is None:
                first.kill()
            first.wait()
            if (root / "registry.db").is_file():
                for endpoint in LocalEndpoints().list_endpoints():
                    stop_servers(endpoint.display_name)
    assert second["succeeded"] is False
    refusal = second["refused"] or ""
    assert f"already working on model '{CHAIN.MODEL}'" in refusal
    assert f"pid {first.pid}" in refusal and "another VERTEX_LOCAL_ROOT" in refusal
    assert outcome["succeeded"] is True, outcome["console_tail"]
    assert outcome["decision"]["is_better"] is True
    # The registry and endpoint hold exactly what the first run alone would have made.
    versions = ModelRegistry().list_versions(CHAIN.MODEL)
    assert [sorted(v.aliases) for v in versions] == [["champion", "default"]]
    endpoint = LocalEndpoints().get(CHAIN.MODEL)
    assert list(endpoint.traffic_split.values()) == [100]
    assert len(list((root / "pipeline-root").iterdir())) == 1  # the refused run made none


def test_run_lock_is_released_when_its_holder_is_killed(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path\n"
            "from vertex_retrain.cli.local_run import exclusive_model_run\n"
            "with exclusive_model_run(Path(sys.argv[1]), 'recs'):\n"
            "    print('held', flush=True); time.sleep(600)\n",
            str(tmp_path),
        ],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        conflict = pytest.raises(RunConflictError, match=rf"pid {holder.pid}, started")
        with conflict, exclusive_model_run(tmp_path, "recs"):
            pass
    finally:
        holder.kill()
        holder.communicate()  # reaps it and closes its stdout pipe
    with exclusive_model_run(tmp_path, "recs"):  # no stale lock after a SIGKILL
        assert (tmp_path / "locks" / "run-recs.lock").read_text().startswith(f"pid {os.getpid()}")
