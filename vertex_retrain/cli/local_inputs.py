"""The folders a local run's first steps read, checked before any step runs.

The library's components that read the training code (``source_uri``) or the dataset
(``data_uri``) fail at once when it is not there, but only once the run has started, and each
such task says it again. A local run reads them on this machine (a ``gs://`` URI under the
local storage root, :mod:`vertex_retrain.backends.local.storage`), so before any step it can
say once that one is missing. Only a value the run is given is checked: an input another task
produces (a window extracted from a warehouse) exists only once that task has run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vertex_retrain.cli.spec_tasks import leaf_tasks
from vertex_retrain.specs.problems import Problem, error

__all__ = ["READ_INPUTS", "missing_input_problems"]

READ_INPUTS = {
    "build_container": "source_uri",
    "source_digest": "source_uri",
    "plan_training": "source_uri",
    "check_data": "data_uri",
    "prepare_dataset": "data_uri",
    "extract_window": "data_uri",
}
"""The library components that read a location as they start, by the function their executor
runs, and the input that names it."""


def missing_input_problems(spec: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[Problem]:
    """One error per location a task of the run would read that is not on this machine.

    Args:
        spec: The compiled pipeline.
        arguments: Its parameter values (defaults with the run's overrides).

    Returns:
        The errors, each naming the input, the value, where it was looked for and the tasks
        that read it.
    """
    from vertex_retrain.backends.local.storage import StorageError, to_local_path

    readers: dict[tuple[str, str], list[str]] = {}
    for task in leaf_tasks(spec, arguments):
        name = READ_INPUTS.get(task.function)
        if name is None or name in task.unknown or task.runs is False:
            continue
        value = task.parameters.get(name)
        if isinstance(value, str) and value:
            readers.setdefault((name, value), []).append(task.path)
    problems = []
    for (name, value), tasks in readers.items():
        if "://" in value and not value.startswith("gs://"):
            continue  # another store (a warehouse): its own step says what it cannot read
        try:
            local = to_local_path(value)
        except StorageError as refused:
            problems.append(error(name, value, f"{refused}.", code="input-unreadable"))
            continue
        if local.exists():
            continue
        stored = value.startswith(("gs://", "/gcs/"))
        where = f"a local run reads it from {local}, which" if stored else "it"
        readers_said = ", ".join(sorted({path.rsplit("/", 1)[-1] for path in tasks}))
        problems.append(
            error(
                name,
                value,
                f"{where} does not exist; {readers_said} would fail as the run starts.",
                [f"--param {name}=A_PATH_ON_THIS_MACHINE"]
                + ([f"a copy at {local}"] if stored else []),
                code="input-missing",
            )
        )
    return problems
