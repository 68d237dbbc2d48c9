"""The paired bootstrap: entities resampled, differences on shared draws, seeded."""

from __future__ import annotations

import numpy as np
import pytest

from vertex_retrain.steps.paired_bootstrap import paired_differences


def _data(n: int = 400, seed: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    weight = rng.integers(1, 6, n).astype(float)
    # A large entity effect shared by both models: pairing cancels it.
    entity = rng.normal(0.5, 0.3, n)
    candidate = entity + 0.02 + rng.normal(0, 0.02, n)
    other = entity + rng.normal(0, 0.02, n)
    return weight, candidate, other


def test_paired_differences_point_is_the_weighted_mean_difference() -> None:
    weight, candidate, other = _data()
    (interval,) = paired_differences(weight, candidate, {"champion": other}).values()
    expected = np.sum(weight * (candidate - other)) / np.sum(weight)
    assert interval.point == pytest.approx(expected, abs=1e-12)
    assert interval.low < interval.point < interval.high
    assert (interval.other, interval.entities, interval.resamples) == ("champion", 400, 1000)


def test_paired_differences_are_deterministic_for_a_seed_and_vary_with_it() -> None:
    weight, candidate, other = _data()
    first = paired_differences(weight, candidate, {"c": other}, seed=7)
    again = paired_differences(weight, candidate, {"c": other}, seed=7)
    other_seed = paired_differences(weight, candidate, {"c": other}, seed=8)
    assert first == again
    assert first["c"].low != other_seed["c"].low


def test_paired_differences_pairing_cancels_what_both_share() -> None:
    weight, candidate, other = _data()
    (paired,) = paired_differences(weight, candidate, {"c": other}).values()
    # The same differences without the pairing: each side resampled on its own draw.
    rng = np.random.default_rng(0)
    unpaired = []
    for _ in range(300):
        a, b = rng.integers(0, 400, 400), rng.integers(0, 400, 400)
        unpaired.append(
            np.sum(weight[a] * candidate[a]) / np.sum(weight[a])
            - np.sum(weight[b] * other[b]) / np.sum(weight[b])
        )
    assert paired.high - paired.low < 0.25 * (
        np.quantile(unpaired, 0.975) - np.quantile(unpaired, 0.025)
    )
    assert paired.low > 0  # +0.02 on every entity is seen through the entity noise


def test_paired_differences_constant_shift_has_a_zero_width_interval() -> None:
    weight = np.ones(50)
    base = np.linspace(0, 1, 50)
    result = paired_differences(weight, base + 0.1, {"same": base, "shifted": base + 0.1})
    assert result["same"].point == pytest.approx(0.1) and result["same"].low == pytest.approx(0.1)
    assert result["same"].high == pytest.approx(0.1)
    assert result["shifted"].low == pytest.approx(0.0) == result["shifted"].high


def test_paired_differences_shared_draws_across_comparisons() -> None:
    weight, candidate, other = _data()
    both = paired_differences(weight, candidate, {"a": other, "b": other})
    assert both["a"].low == both["b"].low and both["a"].high == both["b"].high


def test_paired_differences_level_widens_the_interval() -> None:
    weight, candidate, other = _data()
    narrow = paired_differences(weight, candidate, {"c": other}, level=0.8)["c"]
    wide = paired_differences(weight, candidate, {"c": other}, level=0.99)["c"]
    assert wide.low < narrow.low and wide.high > narrow.high
    assert (
        "99% interval" in wide.describe() and "1,000 resamples of 400 entities" in wide.describe()
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"weight": np.ones(1)}, "at least 2 entities"),
        ({"level": 1.0}, "level must be in"),
        ({"level": 0.0}, "level must be in"),
        ({"resamples": 0}, "resamples must be >= 1"),
        ({"candidate": np.ones(3)}, "one value per entity"),
    ],
)
def test_paired_differences_refuses_what_it_cannot_resample(arguments: dict, message: str) -> None:
    call = {"weight": np.ones(4), "candidate": np.ones(4), "level": 0.95, "resamples": 10}
    call.update(arguments)
    others = {"c": np.ones(call["weight"].shape[0])}
    with pytest.raises(ValueError, match=message):
        paired_differences(call["weight"], call["candidate"], others, level=call["level"],
                           resamples=call["resamples"])  # fmt: skip
