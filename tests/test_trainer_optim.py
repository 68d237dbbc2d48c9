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

CONFIG = ModelConfig(n_members=40, n_stores=5, n_drinks=12, n_categories=3, embedding_dim=8)


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


def _train(model: DrinkRecommender, optimizer: object, steps: range) -> None:
    for step in steps:
        optimizer.zero_grad(set_to_none=True)  # type: ignore[attr-defined]
        _loss(model, _batch(step)).backward()
        optimizer.step()  # type: ignore[attr-defined]


def test_training_optimizer_matches_torch_adamw_and_sparse_adam() -> None:
    torch.manual_seed(0)
    ours = DrinkRecommender(CONFIG)
    theirs = copy.deepcopy(ours)
    theirs.member.sparse = True
    dense = [p for name, p in theirs.named_parameters() if name != "member.weight"]
    reference = [
        torch.optim.AdamW(dense, lr=0.05, weight_decay=0.0),
        torch.optim.SparseAdam([theirs.member.weight], lr=0.05),
    ]

    class Both:
        def zero_grad(self, set_to_none: bool) -> None:
            for optimizer in reference:
                optimizer.zero_grad(set_to_none=set_to_none)

        def step(self) -> None:
            for optimizer in reference:
                optimizer.step()

    _train(ours, TrainingOptimizer(ours, lr=0.05), range(6))
    _train(theirs, Both(), range(6))
    for name, tensor in theirs.state_dict().items():
        assert torch.equal(ours.state_dict()[name], tensor), name


def test_training_optimizer_updates_only_the_batch_members() -> None:
    torch.manual_seed(1)
    model = DrinkRecommender(CONFIG)
    before = model.member.weight.detach().clone()
    _train(model, TrainingOptimizer(model, lr=0.05, weight_decay=0.1), range(4))
    after = model.member.weight.detach()
    assert torch.equal(after[11:], before[11:])  # never in a batch: not even decayed
    assert not torch.equal(after[1:11], before[1:11])
    assert model.member.sparse


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
    other = TrainingOptimizer(DrinkRecommender(ModelConfig(9, 5, 12, 3, 8)), lr=0.01)
    with pytest.raises(ValueError, match="for another model"):
        optimizer.load_state_dict(other.state_dict())


def test_process_group_backend_is_nccl_on_gpus_and_gloo_on_cpus() -> None:
    assert process_group_backend(use_cuda=True) == "nccl"
    assert process_group_backend(use_cuda=False) == "gloo"
