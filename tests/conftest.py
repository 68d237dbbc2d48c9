"""Fixtures shared by the test modules."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.leftover_processes import kill, leftovers, live_processes
from vertex_retrain.backends.local.jobs.job_sandbox import (
    HYPERTUNE_FILE_VARIABLE,
    TEMP_VARIABLES,
    hypertune_file,
)
from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
from vertex_retrain.backends.local.storage import local_root

# Hypothesis's default 200 ms deadline per example and its too_slow health check are timed
# assertions: under `pytest -n 2` with both workers busy they fail tests that are correct.
# Liveness is bounded by pytest-timeout instead.
settings.register_profile(
    "vertex-retrain", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("vertex-retrain")

RUN_TEMP_VARIABLE = "VERTEX_RETRAIN_TESTS_TMPDIR"
"""The run's temporary folder, which pytest-xdist's workers inherit from the controller."""
_MADE_HERE = pytest.StashKey[str]()
_BEFORE = pytest.StashKey[tuple[dict[str, str | None], str | None]]()


def pytest_configure(config: pytest.Config) -> None:
    """Points ``TMPDIR`` (``TMP``, ``TEMP``) of the tests, and of every process they start, at
    one folder of the run, removed when the run ends.

    What a test makes in the machine's temporary directory and does not remove (kfp.local's
    ``ephemeral_component.py`` folders, a documentation example's ``mkdtemp``) would otherwise
    pile up in ``/tmp`` run after run. cloudml-hypertune's metric file goes there too: a
    trainer run outside a local job (the trainers' own tests) would write the fixed
    ``/tmp/hypertune/output.metrics``.
    """
    changed = (*TEMP_VARIABLES, HYPERTUNE_FILE_VARIABLE, RUN_TEMP_VARIABLE)
    # Restored when the run ends: mutmut runs pytest several times in one process.
    config.stash[_BEFORE] = ({name: os.environ.get(name) for name in changed}, tempfile.tempdir)
    folder = os.environ.get(RUN_TEMP_VARIABLE)
    if not folder:  # the controller (or a run without xdist): it makes and removes the folder
        folder = tempfile.mkdtemp(prefix="vertex-retrain-tests-")
        config.stash[_MADE_HERE] = folder
        os.environ[RUN_TEMP_VARIABLE] = folder
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            # A terminated run ends as an interrupted one, so the folder is still removed.
            signal.signal(signal.SIGTERM, _interrupt)
    for name in TEMP_VARIABLES:
        os.environ[name] = folder
    os.environ[HYPERTUNE_FILE_VARIABLE] = str(hypertune_file(Path(folder)))
    tempfile.tempdir = folder


def pytest_unconfigure(config: pytest.Config) -> None:
    """Removes the run's temporary folder, in the process that made it, and puts the
    variables back as they were."""
    variables, tempdir = config.stash[_BEFORE]
    for name, value in variables.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    tempfile.tempdir = tempdir
    folder = config.stash.get(_MADE_HERE, None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
        if signal.getsignal(signal.SIGTERM) is _interrupt:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@pytest.fixture
def fast_gcpc_polling(monkeypatch: pytest.MonkeyPatch) -> None:
    """GCPC's job launcher polls a (fake) job at once instead of every 20 s, and reads no
    pipeline run labels from the environment. Modules opt in with
    ``pytestmark = pytest.mark.usefixtures("fast_gcpc_polling")``."""
    from google_cloud_pipeline_components.container.v1.gcp_launcher import job_remote_runner

    monkeypatch.setattr(job_remote_runner, "_POLLING_INTERVAL_IN_SECONDS", 0)
    monkeypatch.delenv("VERTEX_AI_PIPELINES_RUN_LABELS", raising=False)


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh local storage root (``VERTEX_LOCAL_ROOT``) for one test."""
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path / "root"))
    return local_root()


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModelRegistry:
    """A local model registry in a fresh local root (``VERTEX_LOCAL_ROOT``) for one test."""
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path / "root"))
    return ModelRegistry()


@pytest.fixture(scope="module", autouse=True)
def no_leftover_processes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Fails a module whose tests leave a process running once its fixtures are torn down.

    A leaked replica or model server holds ports and files, and outlives the test that
    started it (under ``pytest -n 2`` it meets the other worker's tests). The leftovers are
    killed, so that one leak fails one module only.
    """
    temp_root = tmp_path_factory.getbasetemp()
    before = live_processes(os.getpid(), temp_root)
    yield
    left = leftovers(before, os.getpid(), temp_root)
    if left:
        kill(left)
        listing = "\n".join(f"  pid {pid}: {command}" for pid, command in sorted(left.items()))
        pytest.fail(f"processes still running after the module's tests ended:\n{listing}")


@pytest.fixture
def catalog_still_serving(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A container catalog in which the prebuilt training images are still served.

    Every training image of the shipped catalog is past its end of availability (an error
    everywhere). Tests of what the Python-package path does with an image that is available
    (package checks, the job's environment, the Vertex request) use this copy, whose training
    images end in 2099; their end of availability itself is tested on the shipped catalog.
    """
    import re

    from vertex_retrain.specs import containers

    text = containers.DEFAULT_CONTAINERS_PATH.read_text(encoding="utf-8")
    head, _, rest = text.partition("\ntraining:\n")
    training, _, tail = rest.partition("\nprediction:\n")
    training = re.sub(
        r'end_of_availability: "\d{4}-\d{2}-\d{2}"', 'end_of_availability: "2099-12-31"', training
    )
    copy = tmp_path / "containers.yaml"
    copy.write_text(f"{head}\ntraining:\n{training}\nprediction:\n{tail}", encoding="utf-8")
    monkeypatch.setattr(containers, "DEFAULT_CONTAINERS_PATH", copy)
    return copy
