"""The training optimizer: torch's AdamW and SparseAdam arithmetic, lazy rows, checkpointable."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch

from trainer.checkpoint import CheckpointManager
from trainer.distributed import process_group_backend
from trainer.model import DrinkRecommender, ModelConfig
from trainer.optim import TrainingOptimizer

# Two towers only: the loss below calls the model without the history the head would read.
CONFIG = ModelConfig(
    n_members=40, n_stores=5, n_drinks=12, n_categories=3, embedding_dim=8, history_hidden=0
)


def _batch(step: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(step)
    n = 16
    return {
        "member": torch.randint(1, 11, (n,), generator=g),  # members 11..40 never appear
        "store": torch.randint(0, 5, (n,), generator=g),
        "hour": torch.randint(0, 24, (n,), generator=g),
        "weekday": torch.randint(0, 7, (n,), generator=g),
        "season": torch.randint(0, 4, (n,), generator=g),
        "drink": torch.randint(0, 12, (n,), generator=g),
    }


def _loss(model: DrinkRecommender, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    candidates = torch.arange(12)
    logits = model(
        batch["member"],
        batch["store"],
        batch["hour"],
        batch["weekday"],
        batch["season"],
        candidates,
        candidates % 3,
        candidates % 2,
        torch.zeros((16, 12), dtype=torch.int64),
    )
    return torch.nn.functional.cross_entropy(logits, batch["drink"])


def _train(model: DrinkRecommender, optimizer: TrainingOptimizer, steps: range) -> None:
    for step in steps:
        batch = _batch(step)
        optimizer.prepare(batch["member"])
        optimizer.zero_grad(set_to_none=True)
        _loss(model, batch).backward()
        optimizer.step()


class _Table(torch.nn.Module):
    """A member table and one dense parameter under a quadratic loss (no chaotic dynamics)."""

    def __init__(self) -> None:
        super().__init__()
        self.member = torch.nn.Embedding(30, 4)
        self.scale = torch.nn.Parameter(torch.ones(4))

    def loss(self, rows: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return ((self.member(rows) * self.scale - target[rows]) ** 2).sum()


@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
def test_training_optimizer_follows_torch_adamw(weight_decay: float) -> None:
    torch.manual_seed(0)
    lazy, dense = _Table(), _Table()
    dense.load_state_dict(lazy.state_dict())
    ours = TrainingOptimizer(lazy, lr=0.05, weight_decay=weight_decay)
    theirs = torch.optim.AdamW(dense.parameters(), lr=0.05, weight_decay=weight_decay)
    target = torch.randn(30, 4)
    draws = torch.Generator().manual_seed(1)
    for _ in range(40):
        rows = torch.randint(0, 20, (5,), generator=draws)  # rows 20..29 are never read
        ours.prepare(rows)
        for model, optimizer in ((lazy, ours), (dense, theirs)):
            optimizer.zero_grad(set_to_none=True)
            model.loss(rows, target).backward()
            optimizer.step()
    ours.finish()
    for name, tensor in dense.state_dict().items():
        torch.testing.assert_close(lazy.state_dict()[name], tensor, rtol=0, atol=1e-5, msg=name)
    assert lazy.member.sparse


def test_training_optimizer_step_touches_only_the_batch_rows() -> None:
    torch.manual_seed(1)
    model = _Table()
    optimizer = TrainingOptimizer(model, lr=0.05, weight_decay=0.1)
    target = torch.randn(30, 4)
    for step in range(6):
        rows = torch.tensor([step % 3, 3 + step % 2])
        before = model.member.weight.detach().clone()
        optimizer.prepare(rows)
        optimizer.zero_grad()
        model.loss(rows, target).backward()
        optimizer.step()
        untouched = torch.ones(30, dtype=torch.bool)
        untouched[rows] = False
        assert torch.equal(model.member.weight.detach()[untouched], before[untouched])
    optimizer.finish()  # now rows 0..4 have their idle moves, the never-read ones their decay
    assert not torch.equal(model.member.weight.detach()[5:], before[5:])


def test_training_optimizer_is_deterministic_on_the_recommender() -> None:
    torch.manual_seed(0)
    model = DrinkRecommender(CONFIG)
    again = copy.deepcopy(model)
    for copy_ in (model, again):
        _train(copy_, TrainingOptimizer(copy_, lr=0.05), range(6))
    for name, tensor in model.state_dict().items():
        assert torch.equal(again.state_dict()[name], tensor), name


def test_training_optimizer_state_round_trips_through_a_checkpoint(tmp_path: Path) -> None:
    torch.manual_seed(2)
    straight = DrinkRecommender(CONFIG)
    resumed = copy.deepcopy(straight)
    _train(straight, TrainingOptimizer(straight, lr=0.02, weight_decay=0.01), range(8))

    first = TrainingOptimizer(resumed, lr=0.02, weight_decay=0.01)
    _train(resumed, first, range(4))
    manager = CheckpointManager(tmp_path)
    manager.save(4, {"model": resumed.state_dict(), "optimizer": first.state_dict()})
    state = manager.load(4)  # weights_only: the state is tensors and plain containers
    model = DrinkRecommender(CONFIG)
    model.load_state_dict(state["model"])
    second = TrainingOptimizer(model, lr=0.02, weight_decay=0.01)
    second.load_state_dict(state["optimizer"])
    _train(model, second, range(4, 8))
    for name, tensor in straight.state_dict().items():
        assert torch.equal(model.state_dict()[name], tensor), name


def test_training_optimizer_refuses_another_optimizers_state() -> None:
    model = DrinkRecommender(CONFIG)
    optimizer = TrainingOptimizer(model, lr=0.01)
    old = torch.optim.AdamW(model.parameters(), lr=0.01).state_dict()
    with pytest.raises(ValueError, match="written by an older trainer"):
        optimizer.load_state_dict(old)
    other = TrainingOptimizer(
        DrinkRecommender(ModelConfig(9, 5, 12, 3, 8, history_hidden=0)), lr=0.01
    )
    with pytest.raises(ValueError, match="for another model"):
        optimizer.load_state_dict(other.state_dict())
    with pytest.raises(ValueError, match=r"learning_rate × weight_decay = 0\.2 is too large"):
        TrainingOptimizer(model, lr=0.5, weight_decay=0.4)


def test_process_group_backend_is_nccl_on_gpus_and_gloo_on_cpus() -> None:
    assert process_group_backend(use_cuda=True) == "nccl"
    assert process_group_backend(use_cuda=False) == "gloo"
