"""One local run's use of kfp.local: the version check, then every patch, undone on exit."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator

from vertex_retrain.backends.local.kfp_adapter.kfp_tasks import local_task_policy
from vertex_retrain.backends.local.kfp_adapter.placeholders import local_placeholders
from vertex_retrain.backends.local.kfp_adapter.support import check_kfp_version
from vertex_retrain.backends.local.kfp_adapter.task_cache import TaskCache


@contextlib.contextmanager
def kfp_local_session(
    cache: TaskCache | None, *, reuse: bool, created: dt.datetime, retries: bool = False
) -> Iterator[None]:
    """kfp.local as a local run needs it, for the length of the ``with`` block.

    Args:
        cache: The task cache (:func:`~.kfp_tasks.local_task_policy`); None: no caching.
        reuse: False runs every task and stores the fresh outputs (``--no-cache``).
        created: The run's creation time (:func:`~.placeholders.local_placeholders`).
        retries: Honour the tasks' retry policies (:func:`~.kfp_tasks.without_retries`).

    Raises:
        UnsupportedKfpError: The installed kfp is outside the supported range; nothing is
            patched.
    """
    check_kfp_version()
    with local_task_policy(cache, reuse=reuse, retries=retries), local_placeholders(created):
        yield
