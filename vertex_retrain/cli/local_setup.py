"""What a local run needs before it starts, made on a fresh clone: sample data and the trainer.

``compile.py run NAME --local`` works with every default. The defaults point at the worked
example's bucket (``gs://drink-shops-ml/...``), which maps into the local root
(``$VERTEX_LOCAL_ROOT/gcs/drink-shops-ml/...``), and a fresh clone has nothing there. So, each
with one line saying so:

- missing transactions are generated, small and seeded, by the reference trainer's own command
  line (``python -m trainer.data generate``, a subprocess: the library never imports
  ``trainer``);
- a missing training package (``package_uri``) is built from the clone's ``trainer/`` folder
  into the local root, where the URI points;
- a missing source folder (``source_uri``) is replaced by the clone's ``trainer/`` folder.

Only ``gs://`` and ``/gcs/`` URIs are filled in: they live under the local root, and nothing is
ever written outside it. A local path that does not exist is left for the run to report.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from vertex_retrain.backends.local.storage import StorageError, to_local_path

REPO_ROOT = Path(__file__).resolve().parents[2]

SAMPLE_SCALE: dict[str, int] = {"members": 10000, "stores": 50, "weeks": 26, "seed": 7}
"""Small enough for a few minutes on two cores, large enough for the model to beat the
baseline (the worked example's full scale is 500,000 members, 2,000 shops, 156 weeks)."""


class LocalSetupError(RuntimeError):
    """Sample data or the training package could not be made; the message says what to pass."""


def trainer_source() -> Path | None:
    """The reference trainer's project folder of this clone, or None (the library installed
    from a wheel has no clone next to it)."""
    folder = REPO_ROOT / "examples" / "drink_shops" / "trainer"
    return folder if (folder / "pyproject.toml").is_file() else None


def _in_local_root(uri: str) -> bool:
    return uri.startswith(("gs://", "/gcs/"))


def ensure_sample_data(uri: str, out: TextIO, *, scale: Mapping[str, int] | None = None) -> Path:
    """Generates the sample transactions at ``uri`` unless a dataset is there already.

    Args:
        uri: The dataset folder (``gs://`` or ``/gcs/``; mapped into the local root).
        out: Where the one line saying what happened goes.
        scale: Generator flags (members, stores, weeks, seed); :data:`SAMPLE_SCALE` by default.

    Returns:
        The local folder.

    Raises:
        LocalSetupError: The generator is missing or failed (its output is in the message).
    """
    target = to_local_path(uri)
    if target.is_dir() and any(target.iterdir()):
        return target
    flags = [f"--{name}={value}" for name, value in (scale or SAMPLE_SCALE).items()]
    command = [sys.executable, "-m", "trainer.data", "generate", *flags, f"--out={target}"]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        detail = (result.stderr or result.stdout).strip()
        hint = (
            "install the reference trainer (`pip install ./trainer`, or `make install`), or "
            "pass --param transactions_uri=gs://BUCKET/PATH of your own dataset"
            if "No module named trainer" in detail
            else "see the generator's error above"
        )
        raise LocalSetupError(
            f"no dataset at {uri} ({target}) and generating sample data failed: "
            f"`{' '.join(command)}` exited with {result.returncode}:\n{detail[-2000:]}\n{hint}"
        )
    print(f"sample data generated at {uri} ({target}): {result.stdout.strip()}", file=out)
    return target


def ensure_trainer_package(uri: str, out: TextIO) -> Path:
    """Builds the reference trainer's wheel where ``uri`` points, unless a file is there.

    Args:
        uri: ``gs://.../NAME-VERSION-py3-none-any.whl`` (mapped into the local root).
        out: Where the one line saying what happened goes.

    Returns:
        The local wheel.

    Raises:
        LocalSetupError: There is no trainer folder to build from, or the wheel built has
            another name than ``uri``'s.
    """
    from vertex_retrain.backends.local.builder import build_python_package
    from vertex_retrain.build.context import BuildError

    target = to_local_path(uri)
    if target.is_file():
        return target
    source = trainer_source()
    if source is None:
        raise LocalSetupError(
            f"no training package at {uri} ({target}), and no trainer/ folder of a clone to "
            "build it from; pass --param package_uri=gs://BUCKET/PATH.whl of your wheel"
        )
    destination = uri.rsplit("/", 1)[0]
    try:
        built = build_python_package(source, destination_uri=destination)
    except BuildError as error:
        raise LocalSetupError(
            f"building the training package from {source} failed: {error}"
        ) from None
    if built.path.resolve() != target:
        raise LocalSetupError(
            f"built {built.uri} from {source}, but package_uri is {uri}; pass "
            f"--param package_uri={built.uri}"
        )
    print(f"training package built from {source} into {uri} ({target})", file=out)
    return target


def prepare_local_run(arguments: Mapping[str, Any], out: TextIO) -> dict[str, Any]:
    """Makes what a local run's arguments point at and is missing; returns the arguments.

    Args:
        arguments: The run's arguments (:func:`vertex_retrain.cli.local_run.local_arguments`).
        out: Where one line per thing made goes.

    Returns:
        The arguments, with ``source_uri`` replaced by the clone's ``trainer/`` folder when it
        named an empty place in the local root.

    Raises:
        LocalSetupError: Something missing could not be made (the message says what to pass).
    """
    prepared = dict(arguments)
    try:
        data = prepared.get("transactions_uri")
        if isinstance(data, str) and _in_local_root(data):
            ensure_sample_data(data, out)
        package = prepared.get("package_uri")
        if isinstance(package, str) and _in_local_root(package) and package.endswith(".whl"):
            ensure_trainer_package(package, out)
        source = prepared.get("source_uri")
        if isinstance(source, str) and _in_local_root(source) and not _exists(source):
            folder = trainer_source()
            if folder is None:
                raise LocalSetupError(
                    f"nothing at source_uri {source} ({to_local_path(source)}); pass "
                    "--param source_uri=PATH of your training code's project folder"
                )
            prepared["source_uri"] = str(folder)
            print(f"source_uri {source} is empty here; building from {folder}", file=out)
    except StorageError as error:
        raise LocalSetupError(str(error)) from None
    return prepared


def _exists(uri: str) -> bool:
    path = to_local_path(uri)
    return path.is_file() or (path.is_dir() and any(os.scandir(path)))
