"""The drink shops' ranking metrics: strict ties, an unavailable target is a miss, fewer than
K available drinks, and the "usual plus recent launches" reference."""

from __future__ import annotations

import math

import pytest
import torch

from trainer.metrics import K, launch_scores, ranking_gains

INF = float("inf")


def _gains(scores: list[list[float]], target: list[int], k: int = K) -> tuple[list, list, list]:
    hit, gain, available = ranking_gains(torch.tensor(scores), torch.tensor(target), k)
    return hit.tolist(), gain.tolist(), available.tolist()


def test_metrics_rank_one_is_a_full_gain_and_rank_two_the_discounted_one() -> None:
    hit, gain, _ = _gains([[3.0, 1.0, 2.0], [3.0, 1.0, 2.0]], [0, 2])
    assert hit == [1.0, 1.0]
    assert gain == [1.0, pytest.approx(1 / math.log2(3))]


def test_metrics_ties_rank_the_target_below_every_equal_score() -> None:
    # Three drinks tie with the target: it ranks 4th, whatever order a sort would give.
    hit, gain, _ = _gains([[1.0, 1.0, 1.0, 1.0, 0.0]], [2])
    assert hit == [1.0] and gain == [pytest.approx(1 / math.log2(5))]
    # With k=3 the same tie is a miss: a tied reference is never lucky.
    assert _gains([[1.0, 1.0, 1.0, 1.0, 0.0]], [0], k=3)[0] == [0.0]
    assert _gains([[1.0, 0.5, 0.5, 0.5, 0.0]], [0], k=1)[0] == [1.0]


def test_metrics_an_unavailable_target_is_a_miss_even_among_few_available_drinks() -> None:
    # Two drinks available, fewer than K: the masked target must not count as ranked 3rd.
    hit, gain, available = _gains([[2.0, 1.0, -INF, -INF]], [2])
    assert (hit, gain, available) == ([0.0], [0.0], [False])
    assert _gains([[-INF, -INF, -INF]], [0])[0] == [0.0]
    nan = _gains([[float("nan"), 1.0]], [0])
    assert nan[0] == [0.0] and nan[2] == [False]


def test_metrics_fewer_than_k_available_drinks_still_rank_the_target() -> None:
    hit, gain, available = _gains([[-INF, 0.5, 0.7]], [1])
    assert (hit, available) == ([1.0], [True]) and gain == [pytest.approx(1 / math.log2(3))]


def test_metrics_launch_scores_put_recent_launches_after_the_members_top_drinks() -> None:
    usual = torch.tensor([[5.0, 3.0, 1.0, 0.001, 0.002]])
    counts = torch.tensor([[5.0, 3.0, 1.0, 0.0, 0.0]])
    baseline = torch.tensor([[9.0, 8.0, 7.0, 1.0, 2.0]])
    recent = torch.tensor([[False, False, False, True, True]])
    scores = launch_scores(usual, counts, baseline, recent)[0]
    order = torch.argsort(scores, descending=True).tolist()
    # Two favourites, then the launches (by shop popularity), then the third favourite.
    assert order == [0, 1, 4, 3, 2]
