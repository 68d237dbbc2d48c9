"""Merging the prediction requests that wait for the model into one predict call.

A predict call on the reference model has a fixed cost (about 0.5 ms on a 2-core machine,
however few instances it scores) and a small one per instance (a few hundredths of a ms), so
requests that arrive while the model is busy are scored together in the next call: under
concurrent load one call serves many requests, and throughput grows with the clients instead
of staying flat (`bench/bench_serving.py`). A lone request is scored at once, alone.

Small calls run on the event loop itself: handing a half-millisecond call to a worker thread
and back cost more than the call (two thread wake-ups and the GIL changing hands), and the
GIL would not let the thread run beside the loop anyway. A call of more than
`inline_max_instances` instances runs on a worker thread instead, so that it does not hold up
every other connection for tens of milliseconds; requests arriving meanwhile wait for it and
are then scored together.

Each request still gets exactly its own predictions: instances are independent (the Vertex
contract), and when a merged call fails (a bad instance in one request), each request of the
batch is scored again on its own, so the error goes to the request that caused it.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import json
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

Predict = Callable[[list[Any]], Sequence[Any]]
Results = list[bytes | Exception]


@dataclass
class _Job:
    instances: list[Any]
    answer: asyncio.Future[bytes]


def _answer(predictions: Sequence[Any]) -> bytes:
    return json.dumps({"predictions": list(predictions)}).encode()


class PredictionBatcher:
    """Scores requests one call at a time, merging those that wait into the next call.

    Create it, call `predict` and `close` inside one event loop.
    """

    def __init__(
        self, predict: Predict, *, max_instances: int, inline_max_instances: int = 64
    ) -> None:
        """Starts no thread yet.

        Args:
            predict: Scores a list of instances, one prediction per instance, in order;
                raises for a bad instance.
            max_instances: The most instances merged into one call (a larger single request
                is still scored, alone).
            inline_max_instances: Calls up to this size run on the event loop; larger ones on
                a worker thread.
        """
        self._predict = predict
        self._max_instances = max_instances
        self._inline_max = inline_max_instances
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="predict")
        self._waiting: collections.deque[_Job] = collections.deque()
        self._busy = False  # a call is running on the worker thread
        self._scheduled = False

    async def predict(self, instances: list[Any]) -> bytes:
        """The JSON answer `{"predictions": [...]}` to one request's instances.

        Raises:
            Exception: Whatever `predict` raised for these instances.
        """
        job = _Job(instances, asyncio.get_running_loop().create_future())
        self._waiting.append(job)
        self._schedule()
        return await job.answer

    def close(self) -> None:
        """Lets the worker thread end once its call is done."""
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _schedule(self) -> None:
        # Soon, not now: requests whose data arrived together all join the call first.
        if self._waiting and not self._busy and not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._run)

    def _run(self) -> None:
        self._scheduled = False
        if self._busy or not self._waiting:
            return
        batch = [self._waiting.popleft()]
        size = len(batch[0].instances)
        while self._waiting and size + len(self._waiting[0].instances) <= self._max_instances:
            size += len(self._waiting[0].instances)
            batch.append(self._waiting.popleft())
        if size <= self._inline_max:
            self._deliver(batch, self._score(batch))
        else:
            self._busy = True
            running = asyncio.get_running_loop().run_in_executor(self._executor, self._score, batch)
            running.add_done_callback(functools.partial(self._finished, batch))
        self._schedule()

    def _score(self, batch: list[_Job]) -> Results:
        """One call for the whole batch, else one per request."""
        if len(batch) > 1:
            instances = [x for job in batch for x in job.instances]
            try:
                merged = self._predict(instances)
                if len(merged) == len(instances):
                    answers: Results = []
                    start = 0
                    for job in batch:
                        answers.append(_answer(merged[start : start + len(job.instances)]))
                        start += len(job.instances)
                    return answers
            except Exception:  # scored again per request below, errors and all
                pass
        results: Results = []
        for job in batch:
            try:
                results.append(_answer(self._predict(job.instances)))
            except Exception as error:  # handed to the request that caused it
                results.append(error)
        return results

    def _finished(self, batch: list[_Job], done: asyncio.Future[Results]) -> None:
        self._busy = False
        if done.cancelled():
            results: Results = [RuntimeError("the server is stopping")] * len(batch)
        elif (failure := done.exception()) is not None:
            error = failure if isinstance(failure, Exception) else RuntimeError(str(failure))
            results = [error] * len(batch)
        else:
            results = done.result()
        self._deliver(batch, results)
        self._schedule()

    @staticmethod
    def _deliver(batch: list[_Job], results: Results) -> None:
        for job, result in zip(batch, results, strict=True):
            if job.answer.done():  # the request was cancelled meanwhile
                continue
            if isinstance(result, Exception):
                job.answer.set_exception(result)
            else:
                job.answer.set_result(result)
