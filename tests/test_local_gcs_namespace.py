"""Vertex's /gcs/ convention locally: a trainer that maps gs://B/P to /gcs/B/P runs unmodified
and writes under <root>/gcs/B/P; nothing lands outside the local root."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.package_files import write_wheel
from vertex_retrain.backends.local.jobs import gcs_namespace
from vertex_retrain.backends.local.jobs.executor import FAILED, SUCCEEDED, run_custom_job

IMAGE = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"
# The package path on an image that is served: the shipped catalog's have all ended.
pytestmark = pytest.mark.usefixtures("catalog_still_serving")
# Follows Vertex's documentation: gs://B/P is /gcs/B/P (or, with --host, another folder that
# stands for this machine's /gcs).
TRAINER = """
import argparse, json, os, tempfile
parser = argparse.ArgumentParser()
parser.add_argument("--host", default="/gcs")
parser.add_argument("--via-fuse-root", action="store_true")
args = parser.parse_args()
uri = os.environ["AIP_MODEL_DIR"]
base = os.environ["GCS_FUSE_ROOT"] if args.via_fuse_root else args.host
model = os.path.join(base, uri[len("gs://"):])
os.makedirs(model, exist_ok=True)
with open(os.path.join(model, "weights.txt"), "w") as handle:
    handle.write("trained")
scratch = tempfile.mkdtemp()
with open(os.path.join(scratch, "scratch"), "w") as handle:
    handle.write("x")
with open(os.path.join(model, "run.json"), "w") as handle:
    json.dump({"ppid": os.getppid(), "scratch": scratch, "tmpdir": os.environ["TMPDIR"]}, handle)
"""


def _job(root: Path, args: list[str]) -> dict:
    write_wheel(
        root / "gcs" / "bkt" / "packages",
        "gcswriter",
        "1.0",
        {"gcswriter/__init__.py": "", "gcswriter/task.py": TRAINER},
    )
    return {
        "displayName": "gcs writer",
        "jobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {"machineType": "n1-standard-4"},
                    "replicaCount": 1,
                    "pythonPackageSpec": {
                        "executorImageUri": IMAGE,
                        "packageUris": ["gs://bkt/packages/gcswriter-1.0-py3-none-any.whl"],
                        "pythonModule": "gcswriter.task",
                        "args": args,
                    },
                }
            ],
            "baseOutputDirectory": {"outputUriPrefix": "gs://bkt/run"},
        },
    }


@pytest.mark.slow
def test_job_writing_vertex_gcs_paths_lands_under_the_local_root(root: Path) -> None:
    host_had_gcs = os.path.lexists("/gcs")
    try:
        assert gcs_namespace.namespaces_unavailable(root) is None, "this test needs namespaces"
        result = run_custom_job(_job(root, []), on_log=lambda _: None)
        assert result.state == SUCCEEDED, (result.error, result.failure)
        model = root / "gcs" / "bkt" / "run" / "model"
        assert (model / "weights.txt").read_text() == "trained"
        run = json.loads((model / "run.json").read_text())
        # The replica is this process's own child: the namespace set-up exec'd it, same pid.
        assert run["ppid"] == os.getpid()
        # TMPDIR lies under the job's folder in the root, and is gone with the job.
        assert Path(run["tmpdir"]) == result.job_dir / "tmp" / "workerpool0-0"
        assert Path(run["scratch"]).is_relative_to(result.job_dir / "tmp")
        assert not (result.job_dir / "tmp").exists()
        assert os.path.lexists("/gcs") == host_had_gcs  # nothing created on this machine
        assert not Path("/gcs/bkt/run/model/weights.txt").exists()
    finally:
        if not host_had_gcs and os.path.lexists("/gcs"):  # a regression: clean the host up
            shutil.rmtree("/gcs", ignore_errors=True)


def test_gcs_namespace_binds_over_an_existing_gcs_folder(root: Path, tmp_path: Path) -> None:
    host = tmp_path / "host-gcs"
    host.mkdir()
    (host / "theirs").write_text("host's own file")
    argv = gcs_namespace.in_gcs_namespace(
        ["/bin/sh", "-c", f"cat {host}/theirs 2>/dev/null; echo ours > {host}/mine"], root, host
    )
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""  # inside, the folder is <root>/gcs, not the host's
    assert (root / "gcs" / "mine").read_text() == "ours\n"
    assert sorted(p.name for p in host.iterdir()) == ["theirs"]


@pytest.mark.parametrize(
    ("existing", "args", "expected"),
    [
        (False, [], "created"),
        (True, [], "wrote into"),
        (True, ["--via-fuse-root"], None),
        (False, ["--via-fuse-root"], None),
    ],
)
def test_job_without_namespaces_fails_when_it_touches_the_hosts_gcs(
    root: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    existing: bool,
    args: list[str],
    expected: str | None,
) -> None:
    host = tmp_path / "host-gcs"  # stands for this machine's /gcs
    if existing:
        host.mkdir()
        (host / "theirs").write_text("x")
    monkeypatch.setattr(gcs_namespace, "HOST_GCS", host)
    monkeypatch.setattr(gcs_namespace, "namespaces_unavailable", lambda *_: "no namespaces here")
    monkeypatch.setattr(gcs_namespace, "_WARNED", set())
    result = run_custom_job(_job(root, [f"--host={host}", *args]), on_log=lambda _: None)
    again = run_custom_job(_job(root, ["--via-fuse-root"]), on_log=lambda _: None)
    assert any("no namespaces here" in w for w in result.warnings)
    assert not any("no namespaces here" in w for w in again.warnings)  # warned once
    assert again.state == SUCCEEDED
    if expected is None:
        assert result.state == SUCCEEDED, result.error
    else:
        assert result.state == FAILED
        assert expected in (result.error or "") and str(host) in (result.error or "")
