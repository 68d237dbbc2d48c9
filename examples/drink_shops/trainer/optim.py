"""The optimizer: AdamW whose member-table rows are updated lazily, at a cost set by the batch.

A step's gradient touches only the members in its batch, but AdamW still updates every row of
the member table at every step: with a zero gradient a row keeps moving by its decaying
momentum. Version 1 did exactly that, with a dense gradient; at 500,000 members the table's
bookkeeping was 98% of a step, and the cost grew with the member table.

`TrainingOptimizer` gives the member table sparse gradients and brings a row up to date only
when it is read: `prepare` (before the forward pass) applies in one go the zero-gradient AdamW
steps the batch's rows missed since their last update, in closed form, and `step` then
updates them with their gradient; `finish` brings every row up to date before evaluation.
The trajectory is AdamW's (dense parameters bit for bit; member rows up to float rounding and
eps, see `_catch_up`), and a step costs the same at any member count.

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
_NEGLIGIBLE = 1e-12  # idle-step terms below this share of the first are dropped
_BIAS_FLAT = 16_384  # from here on sqrt(1 - beta2**t) / (1 - beta1**t) is 1 within 4e-8
_FINISH_CHUNK = 8192  # rows brought up to date at once by `finish`


class TrainingOptimizer:
    """AdamW (decoupled weight decay, bias-corrected moments), lazy on the member table.

    Args:
        model: the recommender; its member table is switched to sparse gradients.
        lr: learning rate.
        weight_decay: decoupled weight decay.
        betas: Adam's moment decay rates.
        eps: Adam's denominator term.

    Raises:
        ValueError: lr × weight_decay so large that an idle row's moves do not shrink.
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
        device = member.weight.device
        # The step each member row was last brought up to date at (0: never).
        self.last_step = {
            name: torch.zeros(self.params[name].shape[0], dtype=torch.int64, device=device)
            for name in SPARSE_PARAMETERS
        }
        self.steps = 0
        self._decay = 1.0 - lr * weight_decay
        self._ratio = betas[0] / betas[1] ** 0.5 / self._decay
        if not 0 < self._ratio < 1:
            raise ValueError(
                f"learning_rate × weight_decay = {lr * weight_decay:g} is too large: an idle "
                f"member row would never settle; keep it below {1 - betas[0] / betas[1] ** 0.5:.4f}"
            )
        self._tail = self._tail_table(betas).to(device)

    def _tail_table(self, betas: tuple[float, float]) -> torch.Tensor:
        """G(t) = sum over k >= 1 of ratio**k * bias(t + k), for t = 0.._BIAS_FLAT, float64."""
        beta1, beta2 = betas
        terms = math.ceil(math.log(_NEGLIGIBLE) / math.log(self._ratio))
        powers = self._ratio ** torch.arange(1, terms + 1, dtype=torch.float64)
        step = torch.arange(_BIAS_FLAT + terms + 1, dtype=torch.float64).clamp(min=1)
        bias = torch.sqrt(1 - beta2**step) / (1 - beta1**step)
        return bias[1:].unfold(0, terms, 1)[: _BIAS_FLAT + 1] @ powers

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop every gradient (`set_to_none` is accepted for `torch.optim` compatibility)."""
        for param in self.params.values():
            param.grad = None

    @torch.no_grad()
    def prepare(self, members: torch.Tensor) -> None:
        """Bring the member rows a batch is about to read up to date; call before the forward.

        Args:
            members: the batch's member indices (repeats allowed).
        """
        for name in self.last_step:
            self._catch_up(name, torch.unique(members), self.steps)

    @torch.no_grad()
    def step(self) -> None:
        """One AdamW update: every dense parameter, and the member rows with a gradient."""
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
                grad = grad.coalesce()
                rows, values = grad.indices()[0], grad.values()
                self._catch_up(name, rows, self.steps - 1)  # rows another replica read
                # index_select / index_copy_: several times faster than [rows] on CPU.
                new_m = m.index_select(0, rows).lerp_(values, 1 - beta1)
                new_v = v.index_select(0, rows).mul_(beta2)
                new_v.addcmul_(values, values, value=1 - beta2)
                m.index_copy_(0, rows, new_m)
                v.index_copy_(0, rows, new_v)
                denom = (new_v.sqrt() / correction2**0.5).add_(self.eps)
                moved = param.index_select(0, rows).mul_(self._decay)
                moved -= new_m.div_(denom).mul_(self.lr / correction1)
                param.index_copy_(0, rows, moved)
                self.last_step[name].index_fill_(0, rows, self.steps)
                continue
            if self.weight_decay:
                param.mul_(self._decay)
            m.lerp_(grad, 1 - beta1)
            v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            denom = (v.sqrt() / correction2**0.5).add_(self.eps)
            param.addcdiv_(m, denom, value=-self.lr / correction1)

    @torch.no_grad()
    def finish(self) -> None:
        """Bring every member row up to the current step, as AdamW would have left it.

        Call before evaluating or exporting the model. Checkpoints keep the lazy state (the
        optimizer's `last_step` included), so a resumed run finishes to the same weights.
        """
        for name in self.last_step:
            size = self.params[name].shape[0]
            device = self.params[name].device
            for start in range(0, size, _FINISH_CHUNK):
                rows = torch.arange(start, min(size, start + _FINISH_CHUNK), device=device)
                self._catch_up(name, rows, self.steps)

    @torch.no_grad()
    def _catch_up(self, name: str, rows: torch.Tensor, until: int) -> None:
        """Apply to `rows` (distinct) the gradient-free AdamW steps up to `until` they missed.

        Without a gradient, step s decays the weight by (1 - lr·wd), moves it by
        -lr · m_s / bc1_s / sqrt(v_s / bc2_s) and decays m and v by beta1 and beta2. From the
        last update at t0 over K idle steps that compounds to

            p · d**K - lr · d**K · m / sqrt(v) · sum_k ratio**k · bias(t0 + k),

        with d = 1 - lr·wd, ratio = beta1 / sqrt(beta2) / d, bias(s) = sqrt(bc2_s) / bc1_s:
        AdamW's arithmetic but for eps, which is far below sqrt(v) while the terms matter.
        """
        last = self.last_step[name].index_select(0, rows)
        behind = torch.nonzero(last < until).flatten()
        if behind.numel() == 0:
            return
        if behind.numel() < rows.numel():
            rows, last = rows.index_select(0, behind), last.index_select(0, behind)
        param, m, v = self.params[name], self.exp_avg[name], self.exp_avg_sq[name]
        beta1, beta2 = self.betas
        steps = (until - last).to(torch.float64)
        cap = self._tail.numel() - 1
        # sum over k = 1..K of ratio**k * bias(t0 + k) = G(t0) - ratio**K * G(t0 + K)
        series = self._tail.index_select(0, last.clamp(max=cap))
        series -= self._ratio**steps * float(self._tail[min(until, cap)])
        old_m, old_v = m.index_select(0, rows), v.index_select(0, rows)
        move = torch.where(old_v > 0, old_m / old_v.sqrt(), torch.zeros_like(old_m))
        moved = param.index_select(0, rows)
        moved -= (self.lr * series)[:, None].to(param.dtype) * move
        if self.weight_decay:
            moved *= (self._decay**steps)[:, None].to(param.dtype)
        param.index_copy_(0, rows, moved)
        m.index_copy_(0, rows, old_m.mul_((beta1**steps)[:, None].to(m.dtype)))
        v.index_copy_(0, rows, old_v.mul_((beta2**steps)[:, None].to(v.dtype)))
        self.last_step[name].index_fill_(0, rows, until)

    def state_dict(self) -> dict[str, Any]:
        """Step count, moments and the rows' last updates (tensors and plain containers)."""
        return {
            "format": STATE_FORMAT,
            "steps": self.steps,
            "exp_avg": dict(self.exp_avg),
            "exp_avg_sq": dict(self.exp_avg_sq),
            "last_step": dict(self.last_step),
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
        for key in ("exp_avg", "exp_avg_sq", "last_step"):
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
