"""End-to-end training runs as real processes: quality, outputs, SIGTERM resume, DDP, hypertune."""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

from trainer.data import generate
from trainer.faults import FAULTS_ENV, faults_env
from trainer.features import encode_rows, read_catalogue, read_columns
from trainer.scalars import masked_crc32c
from trainer.split import make_time_split
from trainer.train import epoch_permutation
from trainer.world import WorldConfig

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent
FLAGS = [
    "--epochs",
    "3",
    "--batch_size",
    "128",
    "--log_every_steps",
    "1",
    "--num_threads",
    "1",
    "--seed",
    "5",
]


def _env(out: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AIP_", "CLOUD_ML_", "CLUSTER_SPEC", FAULTS_ENV))
    }
    for key in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "GCS_FUSE_ROOT"):
        env.pop(key, None)
    env.update(
        PYTHONPATH=str(ROOT),
        CLOUD_ML_HP_METRIC_FILE=str(out / "hypertune" / "output.metrics"),
        CLOUD_ML_TRIAL_ID="7",
    )
    env.update(extra)
    return env


def _train(
    data: Path, out: Path, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "trainer.task",
            "--data",
            str(data),
            "--output_dir",
            str(out),
            *FLAGS,
            *extra,
        ],
        env=env or _env(out),
        capture_output=True,
        text=True,
        timeout=240,
    )


def _metrics(out: Path) -> dict[str, Any]:
    return json.loads((out / "model" / "metrics.json").read_text())


def _losses(out: Path) -> list[float]:
    history = _metrics(out)["training"]["loss_history"]
    assert [step for step, _ in history] == list(range(1, len(history) + 1))
    return [loss for _, loss in history]


def _weights(out: Path) -> dict[str, torch.Tensor]:
    return torch.load(out / "model" / "weights.pt", weights_only=True)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("trainer-data")
    generate(WorldConfig(members=300, stores=20, weeks=12, seed=1), root / "data")
    make_time_split(str(root / "data"), str(root / "split"))
    return root / "split" / "manifest.json"


@pytest.fixture(scope="module")
def reference(dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("reference")
    result = _train(dataset, out, "--checkpoint_every_steps", "7")
    assert result.returncode == 0, result.stderr
    return out


def test_task_model_beats_store_popularity_baseline(reference: Path) -> None:
    metrics = _metrics(reference)
    assert metrics["validation_rows"] > 200
    assert metrics["ndcg_at_10"] > metrics["baseline_ndcg_at_10"] + 0.1
    assert metrics["recall_at_10"] > metrics["baseline_recall_at_10"] + 0.1
    assert metrics["ndcg_at_10_margin"] == pytest.approx(
        metrics["ndcg_at_10"] - metrics["baseline_ndcg_at_10"]
    )


def test_task_writes_artifact_progress_tensorboard_and_hypertune(reference: Path) -> None:
    model = reference / "model"
    index = json.loads((model / "artifact.json").read_text())
    assert set(index["sha256"]) == {
        "weights.pt",
        "config.json",
        "vocab.json",
        "catalogue.json",
        "popularity.json",
        "history.npz",
        "metrics.json",
    }
    training = _metrics(reference)["training"]
    assert training["steps"] == training["total_steps"] == len(training["loss_history"])
    progress = json.loads((reference / "checkpoints" / "progress.json").read_text())
    assert progress == {
        "step": training["steps"],
        "checkpoint_step": training["steps"],
        "total_steps": training["steps"],
    }
    ckpts = sorted(p.name for p in (reference / "checkpoints").glob("ckpt-*.pt"))
    assert len(ckpts) == 2 and ckpts[-1] == f"ckpt-{training['steps']:08d}.pt"

    lines = (reference / "hypertune" / "output.metrics").read_text().splitlines()
    report = json.loads(lines[-1])
    assert float(report["ndcg_at_10"]) == pytest.approx(_metrics(reference)["ndcg_at_10"])
    assert report["trial"] == "7" and int(report["global_step"]) == training["steps"]

    (events,) = (reference / "tensorboard").glob("events.out.tfevents.*")
    data, tags = events.read_bytes(), []
    while data:
        length = int.from_bytes(data[:8], "little")
        assert int.from_bytes(data[8:12], "little") == masked_crc32c(data[:8])
        record = data[12 : 12 + length]
        assert int.from_bytes(data[12 + length : 16 + length], "little") == masked_crc32c(record)
        tags += [t for t in (b"train/loss", b"selection/ndcg_at_10") if t in record]
        data = data[16 + length :]
    assert tags.count(b"train/loss") == training["steps"] and b"selection/ndcg_at_10" in tags


def test_task_outputs_follow_aip_env_through_gcs_fuse_root(dataset: Path, tmp_path: Path) -> None:
    fuse = tmp_path / "fuse"
    env = _env(
        tmp_path,
        GCS_FUSE_ROOT=str(fuse),
        AIP_MODEL_DIR="gs://bucket/job/model/",
        AIP_CHECKPOINT_DIR="gs://bucket/job/checkpoints/",
        AIP_TENSORBOARD_LOG_DIR="/gcs/bucket/job/logs/",
    )
    result = _train(dataset, tmp_path / "unused", "--max_steps", "3", env=env)
    assert result.returncode == 0, result.stderr
    assert (fuse / "bucket/job/model/artifact.json").is_file()
    assert json.loads((fuse / "bucket/job/checkpoints/progress.json").read_text())["step"] == 3
    assert list((fuse / "bucket/job/logs").glob("events.out.tfevents.*"))
    assert not (tmp_path / "unused").exists()


def test_task_resumes_exactly_after_sigterm(dataset: Path, reference: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = _train(
        dataset,
        out,
        "--checkpoint_every_steps",
        "7",
        env=_env(out, **faults_env(sigterm_at_step=10)),
    )
    assert first.returncode == 143, first.stderr
    assert json.loads((out / "checkpoints" / "progress.json").read_text())["checkpoint_step"] == 10
    assert not (out / "model").exists()
    second = _train(dataset, out, "--checkpoint_every_steps", "7")
    assert second.returncode == 0, second.stderr
    assert _metrics(out)["training"]["resumed_from_step"] == 10
    expected, got = _weights(reference), _weights(out)
    for name, tensor in expected.items():
        torch.testing.assert_close(got[name], tensor, rtol=0, atol=1e-6, msg=name)
    ref, res = _metrics(reference), _metrics(out)
    assert res["ndcg_at_10"] == pytest.approx(ref["ndcg_at_10"], abs=1e-9)
    assert _losses(out) == pytest.approx(_losses(reference), abs=1e-6)


def test_task_resume_falls_back_when_newest_checkpoint_is_corrupt(
    dataset: Path, reference: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    first = _train(
        dataset,
        out,
        "--checkpoint_every_steps",
        "7",
        env=_env(out, **faults_env(sigterm_at_step=10)),
    )
    assert first.returncode == 143, first.stderr
    newest = out / "checkpoints" / "ckpt-00000010.pt"
    blob = bytearray(newest.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    newest.write_bytes(bytes(blob))
    second = _train(dataset, out, "--checkpoint_every_steps", "7")
    assert second.returncode == 0, second.stderr
    assert "skipping checkpoint at step 10" in second.stderr
    assert _metrics(out)["training"]["resumed_from_step"] == 7
    for name, tensor in _weights(reference).items():
        torch.testing.assert_close(_weights(out)[name], tensor, rtol=0, atol=1e-6, msg=name)


def test_task_checkpoints_on_external_sigterm_and_exits_143(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    # The trainer holds after step 3 until the signal comes: no race with its speed.
    env = _env(out, **faults_env(hold_at_step=3))
    cmd = [
        sys.executable,
        "-m",
        "trainer.task",
        "--data",
        str(dataset),
        "--output_dir",
        str(out),
        *FLAGS,
        "--checkpoint_every_steps",
        "0",
    ]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    progress = out / "checkpoints" / "progress.json"
    deadline = time.monotonic() + 120
    while not (progress.is_file() and json.loads(progress.read_text())["step"] >= 3):
        assert proc.poll() is None and time.monotonic() < deadline, (
            "training ended before the signal"
        )
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    state = json.loads(progress.read_text())
    assert state["checkpoint_step"] == state["step"] == 3
    assert (out / "checkpoints" / f"ckpt-{state['step']:08d}.pt.sha256").is_file()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_task_two_replica_ddp_matches_single_replica_at_same_global_batch(
    dataset: Path, tmp_path: Path
) -> None:
    single = _train(
        dataset,
        tmp_path / "single",
        "--batch_size",
        "128",
        "--learning_rate",
        "0.02",
        "--epochs",
        "2",
    )
    assert single.returncode == 0, single.stderr
    port = _free_port()
    hosts = {"workerpool0": [f"127.0.0.1:{port}"], "workerpool1": [f"127.0.0.1:{port + 1}"]}
    procs = []
    for rank, (pool, index) in enumerate([("workerpool0", 0), ("workerpool1", 0)]):
        spec = {"cluster": hosts, "task": {"type": pool, "index": index}, "environment": "cloud"}
        env = _env(
            tmp_path / "ddp",
            CLUSTER_SPEC=json.dumps(spec),
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(port),
            WORLD_SIZE="2",
            RANK=str(rank),
        )
        cmd = [
            sys.executable,
            "-m",
            "trainer.task",
            "--data",
            str(dataset),
            "--output_dir",
            str(tmp_path / "ddp"),
            *FLAGS,
            "--batch_size",
            "64",
            "--learning_rate",
            "0.01",
            "--epochs",
            "2",
        ]
        procs.append(
            subprocess.Popen(
                cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
        )
    try:
        for proc in procs:
            _, stderr = proc.communicate(timeout=240)
            assert proc.returncode == 0, stderr
    finally:  # one replica failing leaves its peer blocked in a collective: stop it
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    one, two = _metrics(tmp_path / "single"), _metrics(tmp_path / "ddp")
    assert two["training"]["world_size"] == 2 and two["training"]["global_batch"] == 128
    assert two["training"]["learning_rate"] == pytest.approx(0.02)
    assert len(_losses(tmp_path / "ddp")) == len(_losses(tmp_path / "single")) > 10
    assert _losses(tmp_path / "ddp") == pytest.approx(_losses(tmp_path / "single"), abs=1e-4)
    assert two["ndcg_at_10"] == pytest.approx(one["ndcg_at_10"], abs=0.02)


def test_task_rejects_bad_flags_and_missing_data(tmp_path: Path) -> None:
    bad = _train(tmp_path / "none", tmp_path / "o", "--learning_rate", "-1")
    assert bad.returncode == 2 and "--learning_rate must be > 0" in bad.stderr
    missing = _train(tmp_path / "none", tmp_path / "o")
    assert missing.returncode == 2 and "no dataset" in missing.stderr


def test_encode_rows_time_features_match_parquet_columns(dataset: Path) -> None:
    manifest = json.loads(dataset.read_text())
    columns = read_columns(manifest, "selection")
    rows = encode_rows(columns, columns["member_id"][:0], read_catalogue(manifest))
    table = pq.read_table(Path(manifest["data_uri"]) / manifest["selection"]["files"][0])
    for name in ("hour", "weekday", "season"):
        assert (getattr(rows, name) == table.column(name).to_numpy()).all(), name
    assert (rows.member == 0).all()  # an empty vocabulary makes every member unknown


def test_task_amp_on_cpu_with_time_based_checkpoints(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "amp"
    # A period far below a step's time makes every step due: one checkpoint per step.
    result = _train(dataset, out, "--max_steps", "6", "--amp", "--checkpoint_every_seconds", "1e-9")
    assert result.returncode == 0, result.stderr
    training = _metrics(out)["training"]
    assert training["amp"] is True and training["steps"] == 6
    assert training["checkpoints"]["count"] == 6 and training["checkpoints"]["bytes"] > 0
    assert training["startup_seconds"] > 0 and isinstance(training["encoded_cache"]["built"], bool)
    assert all(math.isfinite(loss) for loss in _losses(out))
    assert len(list((out / "checkpoints").glob("ckpt-*.pt"))) == 2


def test_epoch_permutation_is_numpys_permutation_in_int32() -> None:
    order = epoch_permutation(3, 2, 10_007)
    assert order.dtype == np.int32
    assert np.array_equal(order, np.random.default_rng([3, 7, 2]).permutation(10_007))
