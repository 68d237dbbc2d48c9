"""Cluster layout from the Vertex environment, process-group set-up and the LR scaling rule.

Vertex's PyTorch containers set MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK; every job also
gets CLUSTER_SPEC (`{"cluster": {"workerpool0": [...], ...}, "task": {"type", "index"}}`).
The explicit variables win; CLUSTER_SPEC fills in when they are absent. Pools 0 (primary) and 1
(workers) train; pool 2 (parameter or reduction servers) and 3 (evaluators) have no role here.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass

TRAINING_POOLS = ("workerpool0", "workerpool1")


@dataclass(frozen=True)
class ClusterInfo:
    """Where this process sits in the job.

    Attributes:
        world_size: number of training replicas.
        rank: this replica's rank (0 is the primary, which evaluates and exports).
        master_addr: rendezvous host.
        master_port: rendezvous port.
        trains: False for pools that take no part in data-parallel training.
    """

    world_size: int = 1
    rank: int = 0
    master_addr: str = "127.0.0.1"
    master_port: int = 29500
    trains: bool = True

    @property
    def is_primary(self) -> bool:
        """True on rank 0."""
        return self.rank == 0


def cluster_from_env(env: Mapping[str, str] | None = None) -> ClusterInfo:
    """Read the cluster layout from the environment.

    Args:
        env: environment mapping; `os.environ` by default.

    Raises:
        ValueError: the variables are malformed or inconsistent (e.g. RANK >= WORLD_SIZE).
    """
    env = os.environ if env is None else env
    spec_text = env.get("CLUSTER_SPEC")
    spec = json.loads(spec_text) if spec_text else {}
    cluster = spec.get("cluster", {})
    task = spec.get("task", {})
    pool, index = task.get("type", "workerpool0"), int(task.get("index", 0))
    if spec and pool not in TRAINING_POOLS:
        return ClusterInfo(trains=False)
    hosts = [h for p in TRAINING_POOLS for h in cluster.get(p, [])]
    master_host, _, master_port = (hosts[0] if hosts else "127.0.0.1:29500").rpartition(":")
    try:
        world_size = int(env.get("WORLD_SIZE", len(hosts) or 1))
        rank = int(env.get("RANK", index if pool == "workerpool0" else 1 + index))
        port = int(env.get("MASTER_PORT", master_port or 29500))
    except ValueError as error:
        raise ValueError(f"WORLD_SIZE, RANK and MASTER_PORT must be integers: {error}") from error
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"need 0 <= RANK < WORLD_SIZE, got RANK={rank} WORLD_SIZE={world_size}")
    return ClusterInfo(
        world_size=world_size,
        rank=rank,
        master_addr=env.get("MASTER_ADDR", master_host or "127.0.0.1"),
        master_port=port,
    )


def scaled_learning_rate(base_learning_rate: float, world_size: int) -> float:
    """Linear scaling rule: the global batch grows with the replicas, so does the LR.

    `--learning_rate` is the rate for one replica's batch; with N replicas the global batch is
    N × `--batch_size` and the rate N × `--learning_rate` (Goyal et al. 2017; the source
    documents' 64 × 4 = 256 example).
    """
    return base_learning_rate * world_size


def process_group_backend(use_cuda: bool) -> str:
    """NCCL between GPUs, gloo between CPU processes."""
    return "nccl" if use_cuda else "gloo"


def init_process_group(info: ClusterInfo, use_cuda: bool, timeout_s: float = 1800.0) -> None:
    """Join the job's process group (`process_group_backend`). No-op for one replica."""
    if info.world_size == 1:
        return
    import torch.distributed as dist

    dist.init_process_group(
        backend=process_group_backend(use_cuda),
        init_method=f"tcp://{info.master_addr}:{info.master_port}",
        world_size=info.world_size,
        rank=info.rank,
        timeout=dt.timedelta(seconds=timeout_s),
    )
