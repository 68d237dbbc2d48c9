"""Running a pipeline on this machine: kfp.local's SubprocessRunner plus the local backend.

The console shows the progress (:mod:`vertex_retrain.cli.run_progress`: the current step, its
elapsed time, training's epoch, loss and ETA); everything kfp.local prints goes to a log file
under the local root, without ANSI codes, and its tail is shown on failure.

Only one local run at a time may work on a model (a lock under `<root>/locks/`): two runs at
once would both be judged against the same champion and both be promoted, which no sequence
of runs can produce. A second run is refused at once, with the first one's pid.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import os
import re
import sys
import time
import warnings
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

from vertex_retrain.backends.local.kfp_adapter.placeholders import LOCAL_LOCATION, LOCAL_PROJECT
from vertex_retrain.cli.console import strip_ansi
from vertex_retrain.cli.failure_record import (
    record_cause,
    record_interruption,
    record_requested_week,
)
from vertex_retrain.cli.local_outcome import LocalRunOutcome, pipeline_outputs
from vertex_retrain.cli.run_progress import RunProgress
from vertex_retrain.cli.task_names import (
    failed_step_line,
    pipeline_display_names,
    pipeline_group_tasks,
)
from vertex_retrain.invocation import command
from vertex_retrain.specs.defaults import PIPELINE_SERVICE_ACCOUNT


class RunConflictError(RuntimeError):
    """Another local run is working on the same model under the same local root."""


@contextlib.contextmanager
def exclusive_model_run(root: Path, model: str) -> Iterator[None]:
    """Hold the lock of `model` under `root` for one run; refuse if another process holds it.

    The lock is an `flock` on `<root>/locks/run-<model>.lock`, so it is released when its
    holder exits, even on SIGKILL: no stale lock survives a crashed run.

    Raises:
        RunConflictError: Another run holds it (the message names that run's pid).
    """
    import fcntl

    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", model).strip("-.") or "pipeline"
    path = root / "locks" / f"run-{slug}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise RunConflictError(
                f"another local run is already working on model {model!r} under {root} "
                f"({holder}); two runs at once would both be compared with the same champion "
                "and both promoted. Wait for it to finish, or use another VERTEX_LOCAL_ROOT"
            ) from None
        handle.truncate(0)
        handle.write(f"pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        handle.flush()
        try:
            yield
        finally:
            handle.truncate(0)
            fcntl.flock(handle, fcntl.LOCK_UN)


class _ProgressFilter(io.TextIOBase):
    """Writes everything to the log (without ANSI codes) and feeds each line to the progress."""

    def __init__(self, log: TextIO, progress: RunProgress) -> None:
        self._log, self._progress = log, progress
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            self._log.write(strip_ansi(line) + "\n")
            self._progress.feed(line)
        return len(text)

    def flush(self) -> None:
        self._log.flush()

    def end_line(self) -> None:
        """Passes on a last line that had no newline."""
        if self._pending:
            self.write("\n")


@contextlib.contextmanager
def _captured(log_path: Path, progress: RunProgress) -> Iterator[None]:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("a", encoding="utf-8") as log:
        stream = _ProgressFilter(log, progress)
        previous = sys.stdout
        sys.stdout = stream
        try:
            yield
        finally:
            sys.stdout = previous
            stream.end_line()
            stream.flush()
            progress.close()


def local_arguments(
    defaults: Mapping[str, Any],
    overrides: Mapping[str, Any],
    *,
    declared: Collection[str] | None = None,
) -> dict[str, Any]:
    """A local run's arguments: the pipeline's defaults, the local backend, then overrides.

    ``project`` and ``location`` default to Vertex placeholders that only Vertex resolves, so
    a local run names them explicitly.

    Args:
        defaults: The pipeline's parameter defaults.
        overrides: The run's values, applied last.
        declared: The pipeline's parameters: ``backend``, ``project`` and ``location`` are
            set only where it has them (None: set all three).
    """
    arguments = dict(defaults)
    local = {"backend": "local", "project": LOCAL_PROJECT, "location": LOCAL_LOCATION}
    arguments.update(
        {name: value for name, value in local.items() if declared is None or name in declared}
    )
    if arguments.get("service_account") == PIPELINE_SERVICE_ACCOUNT:
        arguments["service_account"] = ""  # the local backend runs as this machine's user
    arguments.update(overrides)
    return arguments


def run_pipeline_locally(
    pipeline: Any,
    arguments: Mapping[str, Any],
    *,
    console: TextIO | None = None,
    verbose: bool = False,
    cache: bool = True,
    retries: bool = False,
) -> LocalRunOutcome:
    """Runs ``pipeline`` with kfp.local; returns how it ended and its run summary.

    Args:
        pipeline: A ``@dsl.pipeline`` function, or a pipeline loaded from its compiled YAML
            (``kfp.components.load_component_from_file``).
        arguments: Every parameter it needs (see :func:`local_arguments`); an empty
            ``as_of`` replays the newest week of the local data
            (:func:`vertex_retrain.cli.run_window.with_local_as_of`).
        console: Where progress goes (default: standard output).
        verbose: Show every line of every task.
        cache: Reuse the outputs of tasks that ran before with the same inputs, as Vertex
            does (:mod:`vertex_retrain.backends.local.kfp_adapter.kfp_tasks`); False runs
            every task.
        retries: Run a failed task again as its compiled retry policy says, as Vertex does;
            False (the default) runs each task once and says what Vertex would do.

    Returns:
        The outcome; ``summary`` is the exit handler's summary when the pipeline has one;
        ``refused`` says why nothing ran when another local run holds the same model
        (``model_display_name``, else the pipeline's name) under the same local root.
    """
    from vertex_retrain.backends.local.jobs.field_table_cache import warm_in_background
    from vertex_retrain.backends.local.kfp_adapter.support import (
        UnsupportedKfpError,
        check_kfp_version,
    )
    from vertex_retrain.backends.local.lifeline import run_scope
    from vertex_retrain.backends.local.storage import local_root
    from vertex_retrain.cli.run_window import with_local_as_of

    console = console or sys.stdout
    arguments = with_local_as_of(arguments, console)
    root = local_root()
    model = str(arguments.get("model_display_name") or getattr(pipeline, "name", "pipeline"))
    log_path = root / "logs" / f"run-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    try:
        check_kfp_version()
        with exclusive_model_run(root, model):
            _reconcile(root, console, model, str(arguments.get("champion_alias") or ""))
            warm_in_background(root)  # each job task checks its payload against the table
            with run_scope(root):  # marks the run's processes (lifeline, reconcile)
                return _run_locked(
                    pipeline, arguments, root, log_path, console, verbose, cache, retries, model
                )
    except (RunConflictError, UnsupportedKfpError) as conflict:
        console.write(f"ERROR: {conflict}\n")
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_text(f"refused: {conflict}\n", encoding="utf-8")
        return LocalRunOutcome(False, None, log_path, 0.0, None, refused=str(conflict))


def _reconcile(root: Path, console: TextIO, model: str, champion_alias: str) -> None:
    """Ends what killed runs left under `root` (processes, job states, servers), and puts
    `model`'s champion alias back on the version its endpoint serves when a stopped run
    moved it without deploying; a line for each."""
    from vertex_retrain.backends.local.model_registry.registry_db import (
        DB_FILENAME,
        RegistryError,
    )
    from vertex_retrain.backends.local.reconcile import reconcile_root
    from vertex_retrain.backends.local.serving.champion_serving import restore_serving_champion
    from vertex_retrain.rules.aliases import CHAMPION_ALIAS

    line = reconcile_root(root).line()
    if line:
        console.write(line + "\n")
    if not (root / DB_FILENAME).is_file():
        return  # no registry yet: no champion (and none is made here)
    try:
        restored = restore_serving_champion(model, champion_alias or CHAMPION_ALIAS)
    except RegistryError:
        return  # an unreadable registry fails the run's own register step, which says why
    if restored is not None:
        console.write(restored.restored_line() + "\n")


def _run_locked(
    pipeline: Any,
    arguments: Mapping[str, Any],
    root: Path,
    log_path: Path,
    console: TextIO,
    verbose: bool,
    cache: bool = True,
    retries: bool = False,
    model: str = "pipeline",
) -> LocalRunOutcome:
    from kfp import local

    from vertex_retrain.backends.local.kfp_adapter.session import kfp_local_session
    from vertex_retrain.backends.local.kfp_adapter.task_cache import TaskCache
    from vertex_retrain.backends.local.kfp_adapter.task_temp import tasks_temp_dir

    pipeline_root = root / "pipeline-root"
    pipeline_root.mkdir(parents=True, exist_ok=True)
    before = set(pipeline_root.iterdir())
    # kfp.local makes a workspace folder in the machine's temporary directory when given none
    # (an empty kfp-workspace-* folder left by every run): it gets one under the local root.
    workspace = root / "kfp-workspace"
    workspace.mkdir(exist_ok=True)
    local.init(
        runner=local.SubprocessRunner(use_venv=False),
        pipeline_root=str(pipeline_root),
        workspace_root=str(workspace),
        raise_on_error=True,
    )
    started = time.monotonic()
    succeeded = True
    outputs: dict[str, Any] = {}
    names = pipeline_display_names(pipeline)
    progress = RunProgress(console, verbose=verbose, names=names)
    with _captured(log_path, progress), warnings.catch_warnings():
        # kfp.local warns that our image is not a Python image and that display names are
        # ignored; both are expected here, and would bury the progress lines.
        warnings.filterwarnings("ignore", module=r"kfp\.local\..*")
        try:
            with (
                kfp_local_session(
                    TaskCache(root),
                    reuse=cache,
                    created=datetime.datetime.now(datetime.UTC),
                    retries=retries,
                ),
                tasks_temp_dir(root),  # kfp.local leaves a folder per task in TMPDIR
            ):
                outputs = pipeline_outputs(pipeline(**arguments))
        except KeyboardInterrupt:  # Ctrl-C, or SIGTERM through processes.Terminated
            # The exit handler never runs: the week's record says where the run stopped.
            step = progress.current.name if progress.current else None
            stopped = _newest_run(pipeline_root, before)
            if stopped is not None:
                as_of = str(arguments.get("as_of") or "")
                record_interruption(root, stopped.name, model, as_of, step)
            raise
        except Exception as error:  # kfp.local raises RuntimeError subclasses on task failure
            succeeded = False
            print(f"ERROR: {explain_kfp_error(error, names, pipeline_group_tasks(pipeline))}")
    wall = time.monotonic() - started
    run_dir = _newest_run(pipeline_root, before)
    if not succeeded:
        lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        causes = task_errors(lines)
        if causes and run_dir is not None:
            record_cause(root, run_dir.name, causes[0])
        if run_dir is not None:  # a window that never came: the week it asked for
            record_requested_week(root, run_dir.name, str(arguments.get("as_of") or ""))
        shown = (
            ["", "--- why the tasks failed ---", *causes]
            if causes
            else ["", f"--- last lines of {log_path} ---", *lines[-40:]]
        )
        console.write("\n".join([*shown, ""]))
    summary = _read_summary(run_dir)
    return LocalRunOutcome(succeeded, run_dir, log_path, wall, summary, outputs=outputs)


def _newest_run(pipeline_root: Path, before: set[Path]) -> Path | None:
    """The run folder kfp.local made under ``pipeline_root`` since ``before`` was listed."""
    new_runs = sorted(set(pipeline_root.iterdir()) - before, key=lambda p: p.stat().st_mtime)
    return new_runs[-1] if new_runs else None


def placeholder_hint() -> str:
    """What to pass when kfp.local stops on Vertex's project and region placeholders."""
    return (
        "project, location or service_account is missing: kfp.local cannot resolve Vertex's "
        "placeholders {{$.pipeline_google_cloud_project_id}}, "
        "{{$.pipeline_google_cloud_location}} and {{$.pipeline_service_account}} (it fails "
        "with IndexError before the task starts); run the pipeline with "
        f"`{command('run PIPELINE --local')}` or vertex_retrain.run_local, which resolve "
        "them, or pass them explicitly, e.g. project='local-project', location='local', "
        "service_account=''"
    )


def explain_kfp_error(
    error: BaseException,
    names: Mapping[str, str] | None = None,
    groups: Collection[str] | None = None,
) -> str:
    """The error's message, or what to pass when it is kfp.local's placeholder IndexError;
    a failed step is named by its display name in ``names``, told from the groups it ran in
    by ``groups`` (:func:`failed_step_line`)."""
    import traceback

    if isinstance(error, IndexError):
        frames = traceback.extract_tb(error.__traceback__)
        if any(frame.filename.endswith("placeholder_utils.py") for frame in frames):
            return placeholder_hint()
    return failed_step_line(str(error), names, groups)


_EXCEPTION_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Exit)\w*): (.+)$")
# Where an exception's message ends: a log line of kfp.local, a blank line, a traceback.
_MESSAGE_END = re.compile(
    r"^(\s*$|\d\d:\d\d:\d\d(\.\d+)? - |Traceback \(most recent call last\)|During handling |"
    r"The above exception |-{8,})"
)


def task_errors(log_lines: list[str]) -> list[str]:
    """The exceptions the failed tasks raised, each message once, in order, in whole.

    An exception's message may run over several lines (a :class:`JobSpecError` lists each
    problem, with the field, the value and the alternatives, on a line of its own); the lines
    after ``Type: message`` belong to it until a blank line, a log line or another traceback.

    Returns:
        ``Type: message`` entries, the type without its module (``DataGateBreachError``, not
        ``vertex_retrain.steps.data_gate.DataGateBreachError``: the reader needs the kind of
        failure and its message, not where the class lives); a message of several lines keeps
        its line breaks.
    """
    found: list[str] = []
    said: set[str] = set()  # first lines of messages found, without their exception's type
    lines = [strip_ansi(line) for line in log_lines]
    for index, line in enumerate(lines):
        match = _EXCEPTION_LINE.match(line)
        if not match:
            continue
        message = [f"{match[1].rsplit('.', 1)[-1]}: {match[2]}"]
        indent = line[: len(line) - len(line.lstrip())]  # kfp.local indents a task's output
        for following in lines[index + 1 :]:
            if _MESSAGE_END.match(following) or _EXCEPTION_LINE.match(following):
                break
            message.append(following.removeprefix(indent).rstrip())
        # A step re-raises a backend's error under its own type with the same message: the
        # message is shown once, under the type that raised it first.
        if match[2] not in said:
            said.add(match[2])
            found.append("\n".join(message))
    return found


def _read_summary(run_dir: Path | None) -> dict[str, Any] | None:
    import json

    if run_dir is None:
        return None
    for path in sorted(run_dir.glob("*summary*/summary")):
        try:
            loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        return loaded
    return None


def endpoint_of(arguments: Mapping[str, Any]) -> str:
    """The endpoint a run deploys to: ``endpoint_display_name``, else (as ``deploy_model``
    names it then) the model's display name; "" when the run names neither."""
    return str(arguments.get("endpoint_display_name") or arguments.get("model_display_name") or "")


def cached_tasks(run_dir: Path | None) -> dict[str, str]:
    """Task -> the run it was served from, for the tasks of ``run_dir`` the cache answered."""
    import json

    from vertex_retrain.backends.local.kfp_adapter.task_cache import CACHED_FROM_FILE

    if run_dir is None:
        return {}
    found: dict[str, str] = {}
    for path in sorted(run_dir.glob(f"*/{CACHED_FROM_FILE}")):
        try:
            found[path.parent.name] = str(json.loads(path.read_text(encoding="utf-8"))["run"])
        except (OSError, ValueError, KeyError):
            continue
    return found


def stop_endpoint_servers(endpoint: str) -> int:
    """Stops the model servers of a local endpoint; deployments and traffic stay.

    The ``serve`` command (or any router) starts them again. Returns how many were stopped; 0
    when the endpoint does not exist (a run that failed before deploying).
    """
    from vertex_retrain.backends.local.model_registry.registry_db import RegistryNotFoundError
    from vertex_retrain.backends.local.serving.endpoint_servers import stop_servers

    try:
        return stop_servers(endpoint)
    except RegistryNotFoundError:
        return 0
