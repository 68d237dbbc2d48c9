"""Checkpoints (atomic, verified, keep two, safe loading), RNG capture, cluster env, scalars."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from trainer.checkpoint import CheckpointManager, capture_rng, restore_rng
from trainer.distributed import cluster_from_env, scaled_learning_rate
from trainer.scalars import crc32c, encode_event


def _state(value: float) -> dict[str, object]:
    return {"step": int(value), "w": torch.full((3,), value), "nested": {"xs": [1, 2.5, "a"]}}


def test_checkpoint_manager_keeps_last_two_and_loads_newest(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path)
    for step in (5, 10, 15):
        manager.save(step, _state(step))
    assert manager.steps() == [15, 10]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "ckpt-00000010.pt",
        "ckpt-00000010.pt.sha256",
        "ckpt-00000015.pt",
        "ckpt-00000015.pt.sha256",
    ]
    step, state = manager.load_latest() or (None, None)
    assert step == 15 and torch.equal(state["w"], torch.full((3,), 15.0))
    assert state["nested"] == {"xs": [1, 2.5, "a"]}
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize("damage", ["flip_byte", "truncate", "drop_sidecar"])
def test_checkpoint_manager_falls_back_when_newest_is_damaged(tmp_path: Path, damage: str) -> None:
    manager = CheckpointManager(tmp_path)
    manager.save(1, _state(1))
    path = manager.save(2, _state(2))
    if damage == "flip_byte":
        blob = bytearray(path.read_bytes())
        blob[len(blob) // 2] ^= 0x01
        path.write_bytes(bytes(blob))
    elif damage == "truncate":
        path.write_bytes(path.read_bytes()[:50])
    else:
        path.with_name(path.name + ".sha256").unlink()
    with pytest.raises(ValueError):
        manager.load(2)
    step, state = manager.load_latest() or (None, None)
    assert step == 1 and torch.equal(state["w"], torch.full((3,), 1.0))


def test_checkpoint_manager_returns_none_when_all_are_bad(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path)
    assert manager.load_latest() is None
    manager.save(3, _state(3)).write_bytes(b"garbage")
    assert manager.load_latest() is None


class _Payload:
    """Any class: safe loading must refuse to rebuild it."""


def test_checkpoint_manager_never_unpickles_arbitrary_objects(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path)
    manager.save(4, {"evil": _Payload()})  # hashes fine, but is not weights-only
    with pytest.raises(Exception, match=r"(?i)weights_only|unsupported|global"):
        manager.load(4)
    assert manager.load_latest() is None


def test_capture_rng_round_trips_through_a_checkpoint(tmp_path: Path) -> None:
    random.seed(1)
    np.random.seed(2)
    torch.manual_seed(3)
    CheckpointManager(tmp_path).save(1, {"rng": capture_rng()})
    expected = (random.random(), np.random.rand(), torch.rand(1).item())
    random.seed(9)
    np.random.seed(9)
    torch.manual_seed(9)
    restore_rng(CheckpointManager(tmp_path).load(1)["rng"])
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected


def test_cluster_from_env_reads_vertex_layout() -> None:
    hosts = {
        "workerpool0": ["chief:2222"],
        "workerpool1": ["w0:2222", "w1:2222"],
        "workerpool2": ["ps:2222"],
    }
    spec = {"cluster": hosts, "task": {"type": "workerpool1", "index": 1}}
    info = cluster_from_env({"CLUSTER_SPEC": json.dumps(spec)})
    assert (info.world_size, info.rank, info.master_addr, info.master_port, info.trains) == (
        3,
        2,
        "chief",
        2222,
        True,
    )
    explicit = cluster_from_env(
        {
            "CLUSTER_SPEC": json.dumps(spec),
            "MASTER_ADDR": "10.0.0.2",
            "MASTER_PORT": "1234",
            "WORLD_SIZE": "3",
            "RANK": "1",
        }
    )
    assert (explicit.rank, explicit.master_addr, explicit.master_port) == (1, "10.0.0.2", 1234)
    reducer = cluster_from_env(
        {"CLUSTER_SPEC": json.dumps({**spec, "task": {"type": "workerpool2", "index": 0}})}
    )
    assert not reducer.trains
    assert cluster_from_env({}).world_size == 1 and cluster_from_env({}).is_primary


def test_cluster_from_env_rejects_inconsistent_values() -> None:
    with pytest.raises(ValueError, match="RANK < WORLD_SIZE"):
        cluster_from_env({"WORLD_SIZE": "2", "RANK": "2"})
    with pytest.raises(ValueError, match="must be integers"):
        cluster_from_env({"WORLD_SIZE": "two"})


def test_scaled_learning_rate_is_linear_in_replicas() -> None:
    assert scaled_learning_rate(0.01, 4) == pytest.approx(0.04)
    assert scaled_learning_rate(0.01, 1) == pytest.approx(0.01)


def test_crc32c_matches_reference_vector_and_library() -> None:
    assert crc32c(b"123456789") == 0xE3069283  # the standard CRC-32C check value
    import google_crc32c  # pinned in constraints.txt (a google-cloud dependency)

    blob = encode_event(1.5, 42, tag="train/loss", value=0.25)
    assert crc32c(blob) == google_crc32c.value(blob)
