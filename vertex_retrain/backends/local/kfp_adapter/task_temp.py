"""The temporary folder of a local run's tasks, removed when the run ends.

kfp.local starts every lightweight component as ``sh -ec 'program_path=$(mktemp -d); ...'``
and never removes that folder: each task left an ``ephemeral_component.py`` in a new folder of
the machine's temporary directory (a hundred after an afternoon of runs). For the length of a
run, ``TMPDIR`` (and ``TMP``, ``TEMP``) name a folder of the run's own under
``<root>/tmp/``, removed with everything in it when the run ends; a folder left by a killed
run is removed by the next run. This process's own temporary directory is fixed before the
variables change, so nothing of its own lands in the run's folder.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from vertex_retrain.backends.local.jobs.job_sandbox import TEMP_VARIABLES
from vertex_retrain.backends.local.lifeline import alive, identity

__all__ = ["tasks_temp_dir"]

_PREFIX = "run-"


@contextlib.contextmanager
def tasks_temp_dir(root: Path) -> Iterator[Path]:
    """``TMPDIR`` of the tasks started in the ``with`` block: a folder removed on exit.

    Args:
        root: The local storage root; the folder is made under ``<root>/tmp``.

    Yields:
        The folder.
    """
    tempfile.gettempdir()  # fixes this process's own choice before TMPDIR changes
    parent = root / "tmp"
    parent.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(parent)
    me = identity()  # the pid and its start time: a reused pid does not keep a folder
    prefix = f"{_PREFIX}{me['pid']}-{me['start_time'] or ''}-"
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    saved = {name: os.environ.get(name) for name in TEMP_VARIABLES}
    os.environ.update(dict.fromkeys(TEMP_VARIABLES, str(folder)))
    try:
        yield folder
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(folder, ignore_errors=True)


def _remove_leftovers(parent: Path) -> None:
    """Removes the folders of runs whose process is gone (killed before they could)."""
    for folder in parent.glob(f"{_PREFIX}*"):
        pid, _, rest = folder.name.removeprefix(_PREFIX).partition("-")
        started = rest.partition("-")[0]
        if pid.isdigit() and not alive(int(pid), started or None):
            shutil.rmtree(folder, ignore_errors=True)
