"""The optimizer: AdamW for the dense parameters, lazy Adam for the member embedding table.

A step's gradient touches only the members in its batch, but a dense optimizer updates every
row of the table at every step (Adam's moments keep moving rows that had no gradient). With
500,000 members that made a step about 20 times dearer than the model's own work, and the cost
grew with the member table. Here the member table has sparse gradients and `SparseAdam`
updates only the rows in the batch ("lazy Adam"), so a step costs the same at any scale.

With several replicas, DistributedDataParallel averages the dense gradients and is told to
leave the member table alone; `average_sparse_gradients` all-gathers each replica's rows and
values instead (fixed-size tensors, so it works on gloo and NCCL alike).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

SPARSE_PARAMETERS = ("member.weight",)
"""Parameters updated lazily; DistributedDataParallel must ignore them (see `wrap_ddp`)."""


class TrainingOptimizer:
    """AdamW over the dense parameters, SparseAdam over the member table.

    Args:
        model: the recommender; its member table is switched to sparse gradients.
        lr: learning rate of both.
        weight_decay: AdamW's decoupled weight decay; on the member table it is applied
            lazily too, to the rows a step updates.
    """

    def __init__(self, model: nn.Module, lr: float, weight_decay: float = 0.0) -> None:
        member = model.get_submodule("member")
        if not isinstance(member, nn.Embedding):
            raise TypeError(f"model.member must be an nn.Embedding, got {type(member).__name__}")
        member.sparse = True
        self.table = member.weight
        dense = [p for name, p in model.named_parameters() if name not in SPARSE_PARAMETERS]
        self.dense = torch.optim.AdamW(dense, lr=lr, weight_decay=weight_decay)
        self.sparse = torch.optim.SparseAdam([self.table], lr=lr)
        self.lr, self.weight_decay = lr, weight_decay

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear every gradient."""
        self.dense.zero_grad(set_to_none=set_to_none)
        self.sparse.zero_grad(set_to_none=set_to_none)

    @torch.no_grad()
    def step(self) -> None:
        """One update of the dense parameters and of the member rows that have a gradient."""
        self.dense.step()
        grad = self.table.grad
        if grad is None:
            return
        if self.weight_decay:
            rows = grad.coalesce().indices()[0]
            self.table[rows] *= 1.0 - self.lr * self.weight_decay
        self.sparse.step()

    def state_dict(self) -> dict[str, Any]:
        """Both optimizers' states (tensors and plain containers only)."""
        return {"dense": self.dense.state_dict(), "sparse": self.sparse.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Inverse of `state_dict`.

        Raises:
            ValueError: the state was saved by a trainer with a single dense optimizer.
        """
        if set(state) != {"dense", "sparse"}:
            raise ValueError(
                "the checkpoint's optimizer state has keys "
                f"{sorted(state)}, expected ['dense', 'sparse']: it was written by an older "
                "trainer; resume with that version or start from an empty checkpoint folder"
            )
        self.dense.load_state_dict(state["dense"])
        self.sparse.load_state_dict(state["sparse"])


def wrap_ddp(model: nn.Module, device: torch.device) -> nn.Module:
    """DistributedDataParallel over the dense parameters only (the member table is sparse)."""
    ddp = torch.nn.parallel.DistributedDataParallel
    ddp._set_params_and_buffers_to_ignore_for_model(model, list(SPARSE_PARAMETERS))
    return ddp(model, device_ids=[device.index] if device.type == "cuda" else None)


def average_sparse_gradients(model: nn.Module, world_size: int) -> None:
    """Replace the member table's gradient by its mean over the replicas (a collective)."""
    import torch.distributed as dist

    weight = model.get_parameter(SPARSE_PARAMETERS[0])
    grad = weight.grad
    if grad is None or not grad.is_sparse:
        raise RuntimeError(
            "the member table has no sparse gradient: build the optimizer with "
            "TrainingOptimizer (it switches the table to sparse gradients) and call this "
            "after backward()"
        )
    rows, values = grad._indices()[0], grad._values()
    sizes = [torch.zeros(1, dtype=torch.int64, device=rows.device) for _ in range(world_size)]
    dist.all_gather(sizes, torch.tensor([rows.numel()], device=rows.device))
    longest = int(max(int(size) for size in sizes))
    padded_rows = torch.zeros(longest, dtype=rows.dtype, device=rows.device)
    padded_values = torch.zeros((longest, values.shape[1]), dtype=values.dtype, device=rows.device)
    padded_rows[: rows.numel()] = rows
    padded_values[: rows.numel()] = values
    all_rows = [torch.empty_like(padded_rows) for _ in range(world_size)]
    all_values = [torch.empty_like(padded_values) for _ in range(world_size)]
    dist.all_gather(all_rows, padded_rows)
    dist.all_gather(all_values, padded_values)
    kept = [slice(0, int(size)) for size in sizes]
    weight.grad = torch.sparse_coo_tensor(
        torch.cat([r[k] for r, k in zip(all_rows, kept, strict=True)])[None],
        torch.cat([v[k] for v, k in zip(all_values, kept, strict=True)]) / world_size,
        weight.shape,
    )
