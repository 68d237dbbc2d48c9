"""The optimizer: AdamW for the dense parameters, lazy Adam for the member embedding table.

A step's gradient touches only the members in its batch, but a dense optimizer updates every
row of the table at every step (Adam's moments keep moving rows that had no gradient). With
500,000 members that made a step about 20 times dearer than the model's own work, and the cost
grew with the member table. Here the member table has sparse gradients and only the rows in
the batch are updated ("lazy Adam", the arithmetic of `torch.optim.SparseAdam`), so a step
costs the same at any scale.

The update is written out here rather than taken from `torch.optim`: building any
`torch.optim.Optimizer` imports `torch._dynamo`, about a second of CPU at every start, and
after a preemption every second of start-up is lost time.

With several replicas, DistributedDataParallel averages the dense gradients and is told to
leave the member table alone; `average_sparse_gradients` all-gathers each replica's rows and
values instead (fixed-size tensors, so it works on gloo and NCCL alike).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

SPARSE_PARAMETERS = ("member.weight",)
"""Parameters updated lazily; DistributedDataParallel must ignore them (see `wrap_ddp`)."""
STATE_FORMAT = "trainer-optimizer/v1"


class TrainingOptimizer:
    """AdamW over the dense parameters, lazy Adam over the member table's rows in the batch.

    Dense parameters follow `torch.optim.AdamW` (decoupled weight decay, bias-corrected
    moments); the member table follows `torch.optim.SparseAdam`, with the weight decay applied
    to the rows it updates.

    Args:
        model: the recommender; its member table is switched to sparse gradients.
        lr: learning rate.
        weight_decay: decoupled weight decay.
        betas: Adam's moment decay rates.
        eps: Adam's denominator term.
    """

    def __init__(
        self,
        model: nn.Module,
        lr: float,
        weight_decay: float = 0.0,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        member = model.get_submodule("member")
        if not isinstance(member, nn.Embedding):
            raise TypeError(f"model.member must be an nn.Embedding, got {type(member).__name__}")
        member.sparse = True
        self.lr, self.weight_decay, self.betas, self.eps = lr, weight_decay, betas, eps
        self.params = dict(model.named_parameters())
        self.exp_avg = {name: torch.zeros_like(p) for name, p in self.params.items()}
        self.exp_avg_sq = {name: torch.zeros_like(p) for name, p in self.params.items()}
        self.steps = 0

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop every gradient (`set_to_none` is accepted for `torch.optim` compatibility)."""
        for param in self.params.values():
            param.grad = None

    @torch.no_grad()
    def step(self) -> None:
        """One update of the dense parameters and of the member rows that have a gradient."""
        self.steps += 1
        beta1, beta2 = self.betas
        correction1 = 1 - beta1**self.steps
        correction2 = 1 - beta2**self.steps
        for name, param in self.params.items():
            grad = param.grad
            if grad is None:
                continue
            m, v = self.exp_avg[name], self.exp_avg_sq[name]
            if grad.is_sparse:
                self._sparse_step(param, grad, m, v, correction1, correction2)
                continue
            if self.weight_decay:
                param.mul_(1 - self.lr * self.weight_decay)
            m.lerp_(grad, 1 - beta1)
            v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            denom = (v.sqrt() / correction2**0.5).add_(self.eps)
            param.addcdiv_(m, denom, value=-self.lr / correction1)

    def _sparse_step(
        self,
        param: torch.Tensor,
        grad: torch.Tensor,
        m: torch.Tensor,
        v: torch.Tensor,
        correction1: float,
        correction2: float,
    ) -> None:
        beta1, beta2 = self.betas
        grad = grad.coalesce()
        rows, values = grad.indices()[0], grad.values()
        if self.weight_decay:
            param[rows] *= 1 - self.lr * self.weight_decay
        old_m, old_v = m[rows], v[rows]
        new_m = old_m + (values - old_m).mul_(1 - beta1)
        new_v = old_v + (values.pow(2) - old_v).mul_(1 - beta2)
        m[rows], v[rows] = new_m, new_v
        step_size = self.lr * math.sqrt(correction2) / correction1
        param.index_add_(0, rows, -step_size * new_m.div_(new_v.sqrt_().add_(self.eps)))

    def state_dict(self) -> dict[str, Any]:
        """Step count and moments (tensors and plain containers only, for checkpoints)."""
        return {
            "format": STATE_FORMAT,
            "steps": self.steps,
            "exp_avg": dict(self.exp_avg),
            "exp_avg_sq": dict(self.exp_avg_sq),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Inverse of `state_dict`.

        Raises:
            ValueError: the state was saved by another optimizer or for another model.
        """
        if state.get("format") != STATE_FORMAT:
            raise ValueError(
                f"the checkpoint's optimizer state has format {state.get('format')!r}, expected "
                f"{STATE_FORMAT!r}: it was written by an older trainer; resume with that "
                "version or start from an empty checkpoint folder"
            )
        for key in ("exp_avg", "exp_avg_sq"):
            saved, own = state[key], getattr(self, key)
            if set(saved) != set(own) or any(saved[n].shape != own[n].shape for n in own):
                raise ValueError(f"the checkpoint's optimizer {key} is for another model")
            for name, tensor in own.items():
                tensor.copy_(saved[name])
        self.steps = int(state["steps"])


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
