"""A task that fails on its first attempt, for the retry policy of the local runner.
No `from __future__ import annotations`: KFP reads the signature's annotations as objects.
"""

from kfp import dsl

from vertex_retrain.components.image import DEFAULT_COMPONENT_IMAGE


@dsl.component(base_image=DEFAULT_COMPONENT_IMAGE, install_kfp_package=False)
def fails_once(tally: str) -> int:
    """Appends a line to ``tally``; fails when it was the first line (an API's 503)."""
    with open(tally, "a", encoding="utf-8") as handle:
        handle.write("attempt\n")
    with open(tally, encoding="utf-8") as handle:
        attempts = len(handle.readlines())
    if attempts == 1:
        raise RuntimeError("503 Service Unavailable (the first attempt)")
    return attempts


@dsl.pipeline(name="flaky-retried")
def flaky_retried(tally: str) -> None:
    """``fails_once`` with one retry and no backoff."""
    fails_once(tally=tally).set_retry(num_retries=1, backoff_duration="0s")


@dsl.pipeline(name="flaky")
def flaky(tally: str) -> None:
    """``fails_once`` without a retry policy."""
    fails_once(tally=tally)
