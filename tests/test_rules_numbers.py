"""rules.numbers: a whole-number double is an integer, at any depth, and nothing else changes."""

from __future__ import annotations

import math
from typing import Any

import pytest

from vertex_retrain.rules.numbers import whole_numbers


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (32.0, 32),
        (-3.0, -3),
        (0.0, 0),
        (32.5, 32.5),
        (1e-9, 1e-9),
        (True, True),  # a bool is an int to Python, and must stay a bool
        ("32.0", "32.0"),
        (7, 7),
        (None, None),
    ],
)
def test_whole_numbers_makes_whole_doubles_integers_only(value: Any, expected: Any) -> None:
    result = whole_numbers(value)
    assert result == expected and type(result) is type(expected)


def test_whole_numbers_reaches_into_dicts_and_lists() -> None:
    given = {"embedding_dim": 32.0, "rate": 0.005, "sizes": (1.0, 2.5), "nested": [{"n": 4.0}]}
    assert whole_numbers(given) == {
        "embedding_dim": 32, "rate": 0.005, "sizes": [1, 2.5], "nested": [{"n": 4}]
    }  # fmt: skip
    assert type(whole_numbers(given)["embedding_dim"]) is int


@pytest.mark.parametrize("value", [math.inf, -math.inf])
def test_whole_numbers_leaves_infinities_as_floats(value: float) -> None:
    assert whole_numbers(value) == value and isinstance(whole_numbers(value), float)


def test_whole_numbers_leaves_nan_a_float() -> None:
    assert math.isnan(whole_numbers(math.nan))
