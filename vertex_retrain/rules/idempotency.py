"""The request keys that make a re-run find what its first attempt made, without the run.

A pipeline task can run twice: a retry (its retry policy), a restarted launcher, a re-run of a
failed week. Both backends store the key with what they create (a local registry column; a
hashed Vertex label) and look for it before creating anything, so the second attempt returns
the first one's job or version instead of paying for another.

The keys come from what the task is asked to do, never from the run's name: a task that took
the run's name (``{{$.pipeline_job_name}}``) as an input would have a cache key no other run
shares, so Vertex could never serve it from the cache. Two runs that ask for the same work
(the same week's data, the same code, the same inputs) share the key, and the second adopts
the first one's live or finished job; work whose inputs differ has another key.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

KEY_LENGTH = 20
"""Hex digits of a task key: 80 bits, no collision among a project's jobs."""


def registration_key(*, display_name: str, artifact_uri: str) -> str:
    """The key a model version is registered under: the model and its artifact.

    Registering the same model folder again (a retry, a re-run of the week whose training
    came from the cache) returns the version it already is; the decision then moves its
    aliases.

    Args:
        display_name: The registry model's display name.
        artifact_uri: The model directory.

    Returns:
        A non-empty key.
    """
    return f"{display_name}:{artifact_uri}"


def task_key(kind: str, inputs: Mapping[str, Any]) -> str:
    """The key of one task's job: a digest of the kind of task and everything it was asked.

    Args:
        kind: What the task does (``train``, ``tune``, ``evaluate``...), so two kinds with the
            same inputs never share a job.
        inputs: The task's request as plain values (a dataclass's ``asdict``).

    Returns:
        :data:`KEY_LENGTH` hex digits; the same for the same kind and inputs, in any run.
    """
    text = json.dumps({"kind": kind, "inputs": inputs}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:KEY_LENGTH]
