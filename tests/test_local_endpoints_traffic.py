"""Traffic split arithmetic: proportional scaling as Vertex does, with exact rounding."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vertex_retrain.rules.traffic import (
    TrafficSplitError,
    allocate,
    scale,
    unallocate,
)


@st.composite
def splits(draw: st.DrawFn) -> dict[str, int]:
    """Valid splits: 1-6 models, whole percentages summing to 100."""
    count = draw(st.integers(1, 6))
    cuts = sorted(draw(st.lists(st.integers(0, 100), min_size=count - 1, max_size=count - 1)))
    bounds = [0, *cuts, 100]
    return {str(i + 1): bounds[i + 1] - bounds[i] for i in range(count)}


@pytest.mark.parametrize(
    ("split", "percentage", "expected"),
    [
        ({"a": 100}, 20, {"a": 80, "new": 20}),
        ({"a": 60, "b": 40}, 50, {"a": 30, "b": 20, "new": 50}),
        ({"a": 100}, 100, {"a": 0, "new": 100}),
        ({"a": 50, "b": 50}, 0, {"a": 50, "b": 50, "new": 0}),
        # 2/3 of 50/50 is 33.3 each: one point left over, ties go to the earliest model.
        ({"a": 50, "b": 50}, 33, {"a": 34, "b": 33, "new": 33}),
        # Largest remainder: 70*0.9=63, 29*0.9=26.1, 1*0.9=0.9 -> 63+26+1 = 90.
        ({"a": 70, "b": 29, "c": 1}, 10, {"a": 63, "b": 26, "c": 1, "new": 10}),
    ],
)
def test_traffic_allocate_examples(
    split: dict[str, int], percentage: int, expected: dict[str, int]
) -> None:
    assert allocate(split, "new", percentage) == expected


@pytest.mark.parametrize(
    ("split", "removed", "expected"),
    [
        ({"a": 80, "b": 20}, "b", {"a": 100}),
        ({"a": 30, "b": 20, "c": 50}, "c", {"a": 60, "b": 40}),
        ({"a": 0, "b": 100}, "a", {"b": 100}),
        ({"a": 100}, "a", {}),
        # 34/66*100 = 51.5, 32/66*100 = 48.5: tie on remainder, earliest model gets the point.
        ({"a": 34, "b": 32, "c": 34}, "c", {"a": 52, "b": 48}),
    ],
)
def test_traffic_unallocate_examples(
    split: dict[str, int], removed: str, expected: dict[str, int]
) -> None:
    assert unallocate(split, removed) == expected


def test_traffic_unallocate_refuses_to_leave_traffic_to_nobody() -> None:
    with pytest.raises(TrafficSplitError, match="would leave the remaining traffic split at 0%"):
        unallocate({"a": 100, "b": 0, "c": 0}, "a")


def test_traffic_first_model_must_take_everything() -> None:
    with pytest.raises(TrafficSplitError, match="first one must take 100%"):
        allocate({}, "a", 40)
    assert allocate({}, "a", 100) == {"a": 100}


@pytest.mark.parametrize("bad", [-1, 101, 50.0, True, "50"])
def test_traffic_percentage_must_be_an_int_from_0_to_100(bad: object) -> None:
    with pytest.raises(TrafficSplitError, match="integer from 0 to 100"):
        allocate({"a": 100}, "b", bad)  # type: ignore[arg-type]


@given(splits(), st.integers(0, 100))
def test_traffic_allocate_is_proportional_and_sums_to_100(
    split: dict[str, int], percentage: int
) -> None:
    result = allocate(split, "new", percentage)
    assert sum(result.values()) == 100
    assert result["new"] == percentage
    for key, share in split.items():
        exact = Fraction(share * (100 - percentage), 100)
        assert abs(result[key] - exact) < 1  # never more than one point off proportional
        if share == 0:
            assert result[key] == 0


@given(splits(), st.data())
def test_traffic_unallocate_is_proportional_and_sums_to_100(
    split: dict[str, int], data: st.DataObject
) -> None:
    removed = data.draw(st.sampled_from(sorted(split)))
    rest = {k: v for k, v in split.items() if k != removed}
    if rest and sum(rest.values()) == 0:
        with pytest.raises(TrafficSplitError):
            unallocate(split, removed)
        return
    result = unallocate(split, removed)
    assert set(result) == set(rest)
    assert sum(result.values()) == (100 if rest else 0)
    for key, share in rest.items():
        assert abs(result[key] - Fraction(share * 100, 100 - split[removed])) < 1


@given(splits(), st.integers(0, 100))
def test_traffic_scale_keeps_order_of_shares(split: dict[str, int], total: int) -> None:
    result = scale(split, total)
    assert sum(result.values()) == total
    for a in split:
        for b in split:
            if split[a] > split[b]:
                assert result[a] >= result[b]
