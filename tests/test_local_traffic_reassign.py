"""Giving an already deployed model a new share: the others scale pro rata."""

from __future__ import annotations

import pytest

from vertex_retrain.rules.traffic import TrafficSplitError, reassign


def test_reassign_scales_the_others_proportionally() -> None:
    assert reassign({"1": 60, "2": 40, "3": 0}, "3", 50) == {"1": 30, "2": 20, "3": 50}


def test_reassign_gives_everything_when_others_have_nothing() -> None:
    assert reassign({"1": 0, "2": 100}, "2", 30) == {"1": 0, "2": 100}


def test_reassign_refuses_an_invalid_percentage() -> None:
    with pytest.raises(TrafficSplitError):
        reassign({"1": 100}, "1", 101)
