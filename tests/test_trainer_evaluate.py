"""`python -m trainer.evaluate`: the reference trainer's side of the evaluation contract."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from trainer.data import generate
from trainer.split import make_time_split
from trainer.world import WorldConfig
from vertex_retrain.contracts.evaluation import evaluation_args, parse_metrics

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent


def _env(**extra: str) -> dict[str, str]:
    # No Vertex job variables, but the run's hypertune file (conftest): without one the trainer
    # writes the host's /tmp/hypertune/output.metrics.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AIP_", "CLOUD_ML_")) or k == "CLOUD_ML_HP_METRIC_FILE"
    }
    env.pop("GCS_FUSE_ROOT", None)
    env.update(PYTHONPATH=str(ROOT), **extra)
    return env


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args],
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dataset split and one tiny model trained on it, under one folder."""
    root = tmp_path_factory.mktemp("trainer-evaluate")
    generate(WorldConfig(members=200, stores=10, weeks=6, seed=3), root / "data")
    make_time_split(str(root / "data"), str(root / "split"))
    flags = ["--epochs", "1", "--batch_size", "128", "--num_threads", "1"]
    done = _run(
        "trainer.task", "--data", str(root / "split"), "--output_dir", str(root / "out"), *flags
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return root


def test_evaluate_entry_point_writes_the_contract_file_through_the_gcs_mapping(
    trained: Path,
) -> None:
    fuse = trained / "fuse"
    args = evaluation_args(
        candidate_model_dir=str(trained / "out" / "model"),
        champion_model_dir=str(trained / "out" / "model"),
        data=str(trained / "split"),
        metrics_output="gs://bucket/eval/metrics.json",
    )
    done = _run("trainer.evaluate", *args, "--num-threads", "1", GCS_FUSE_ROOT=str(fuse))
    assert done.returncode == 0, done.stderr[-3000:]
    written = json.loads((fuse / "bucket" / "eval" / "metrics.json").read_text())
    parsed = parse_metrics(written, expect_champion=True, source="metrics.json")
    # The same model on the same rows: the champion scores what the candidate does.
    assert parsed.champion == parsed.candidate
    # Training reported on the selection week; the job scores the gate week, which it never read.
    manifest = json.loads((trained / "split" / "manifest.json").read_text())
    at_training = json.loads((trained / "out" / "model" / "metrics.json").read_text())
    assert at_training["validation_rows"] == manifest["selection"]["rows"]
    assert parsed.candidate["validation_rows"] == manifest["gate"]["rows"]
    assert set(parsed.references) == {"popularity", "usual", "usual_plus_launches", "recent_usual"}
    # The per-member scores file averages back to the metrics file's NDCG@10 (row-weighted).
    assert written["scores"] == {"file": "scores.parquet", "metric": "ndcg_at_10"}
    scores = pq.read_table(fuse / "bucket" / "eval" / "scores.parquet").to_pydict()
    weights = scores["weight"]
    for role, value in (("candidate", parsed.candidate["ndcg_at_10"]),
                        ("reference:usual", parsed.references["usual"]["ndcg_at_10"])):  # fmt: skip
        mean = sum(w * v for w, v in zip(weights, scores[role], strict=True)) / sum(weights)
        assert mean == pytest.approx(value)
    assert sum(weights) == manifest["gate"]["rows"]


def test_evaluate_entry_point_without_champion_writes_null_and_fails_cleanly(
    trained: Path,
) -> None:
    output = trained / "solo" / "metrics.json"
    args = evaluation_args(
        candidate_model_dir=str(trained / "out" / "model"),
        champion_model_dir=None,
        data=str(trained / "split"),
        metrics_output=str(output),
    )
    assert _run("trainer.evaluate", *args).returncode == 0
    assert json.loads(output.read_text())["champion"] is None
    missing = trained / "missing" / "metrics.json"
    bad = evaluation_args(
        candidate_model_dir=str(trained / "nowhere"),
        champion_model_dir=None,
        data=str(trained / "split"),
        metrics_output=str(missing),
    )
    done = _run("trainer.evaluate", *bad)
    assert done.returncode == 2 and "error:" in done.stderr
    assert not missing.exists()
