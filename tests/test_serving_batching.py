"""The prediction server's batcher: waiting requests share one predict call, each request
gets exactly its own predictions and its own errors."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from trainer.serve_batching import PredictionBatcher


class _Model:
    """Doubles numbers; refuses negative ones. Records each call's instances and thread."""

    def __init__(self) -> None:
        self.calls: list[list[Any]] = []
        self.threads: list[str] = []

    def predict(self, instances: list[Any]) -> list[Any]:
        self.calls.append(list(instances))
        self.threads.append(threading.current_thread().name)
        bad = [i for i, x in enumerate(instances) if x < 0]
        if bad:
            raise ValueError(f"instances[{bad[0]}] is negative")
        return [2 * x for x in instances]


async def _gather(batcher: PredictionBatcher, requests: list[list[int]]) -> list[Any]:
    answers = await asyncio.gather(*(batcher.predict(r) for r in requests), return_exceptions=True)
    batcher.close()
    return [a if isinstance(a, BaseException) else json.loads(a) for a in answers]


def test_batcher_scores_requests_that_arrive_together_in_one_call() -> None:
    model = _Model()
    batcher = PredictionBatcher(model.predict, max_instances=1000)
    answers = asyncio.run(_gather(batcher, [[1], [2, 3], [4]]))
    assert answers == [{"predictions": [2]}, {"predictions": [4, 6]}, {"predictions": [8]}]
    assert model.calls == [[1, 2, 3, 4]]


def test_batcher_scores_a_lone_request_alone() -> None:
    model = _Model()

    async def one_by_one() -> list[bytes]:
        batcher = PredictionBatcher(model.predict, max_instances=1000)
        answers = [await batcher.predict([x]) for x in (5, 6)]
        batcher.close()
        return answers

    assert [json.loads(a) for a in asyncio.run(one_by_one())] == [
        {"predictions": [10]},
        {"predictions": [12]},
    ]
    assert model.calls == [[5], [6]]


def test_batcher_gives_a_bad_request_its_own_error_and_the_others_their_answers() -> None:
    model = _Model()
    batcher = PredictionBatcher(model.predict, max_instances=1000)
    good, bad, other = asyncio.run(_gather(batcher, [[1, 2], [3, -1], [4]]))
    assert good == {"predictions": [2, 4]} and other == {"predictions": [8]}
    # The index is the request's own, not the merged call's.
    assert isinstance(bad, ValueError) and str(bad) == "instances[1] is negative"
    assert model.calls[0] == [1, 2, 3, -1, 4]  # merged first, then one call per request


def test_batcher_never_merges_more_than_max_instances_into_one_call() -> None:
    model = _Model()
    batcher = PredictionBatcher(model.predict, max_instances=4, inline_max_instances=4)
    answers = asyncio.run(_gather(batcher, [[1, 2], [3, 4], [5], [6, 7, 8, 9, 10]]))
    assert [a["predictions"] for a in answers] == [[2, 4], [6, 8], [10], [12, 14, 16, 18, 20]]
    assert [len(call) for call in model.calls] == [4, 1, 5]


@pytest.mark.parametrize(("size", "on_loop"), [(3, True), (4, False)])
def test_batcher_runs_large_calls_on_a_worker_thread(size: int, on_loop: bool) -> None:
    model = _Model()
    batcher = PredictionBatcher(model.predict, max_instances=1000, inline_max_instances=3)
    (answer,) = asyncio.run(_gather(batcher, [list(range(size))]))
    assert answer == {"predictions": [2 * x for x in range(size)]}
    assert (model.threads == [threading.main_thread().name]) is on_loop


def test_batcher_answers_every_request_when_a_merged_answer_cannot_be_serialised() -> None:
    def predict(instances: list[Any]) -> list[Any]:
        return [{x} if x == 99 else 2 * x for x in instances]  # a set is not JSON

    async def both() -> tuple[bytes | BaseException, bytes | BaseException]:
        batcher = PredictionBatcher(predict, max_instances=1000)
        requests = asyncio.gather(
            batcher.predict([1]), batcher.predict([99]), return_exceptions=True
        )
        try:
            return await asyncio.wait_for(requests, 60)  # a guard: unanswered, it would hang
        finally:
            batcher.close()

    good, bad = asyncio.run(both())
    assert isinstance(good, bytes) and json.loads(good) == {"predictions": [2]}
    assert isinstance(bad, TypeError)
