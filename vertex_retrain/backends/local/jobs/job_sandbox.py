"""What a local job's replicas see of this machine beyond their own folders.

- `/gcs`: `<root>/gcs`, through a namespace of their own (`gcs_namespace`); where namespaces
  are unavailable, the job is warned once per process and fails if it touched the host's
  `/gcs`.
- `TMPDIR` (and `TMP`, `TEMP`): `<root>/jobs/<id>/tmp/<replica>`, one per replica as each
  Vertex replica has a machine's `/tmp` of its own, removed when the job ends, so nothing a
  job leaves in its temporary files outlives it or lands outside the root.
- `CLOUD_ML_HP_METRIC_FILE`: in that folder. cloudml-hypertune writes the reported metric to
  this variable's file, by default the fixed `/tmp/hypertune/output.metrics`: on a Vertex
  replica a file of its own machine, here a file every local job (and run) would share,
  outside the root. A tuning trial's own file (`extra_env`) takes its place.
- Not this process's `PYTHONPATH` (and friends) when the replica runs in a package
  environment of its own (`python_env`).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from vertex_retrain.backends.local.jobs import gcs_namespace

TEMP_VARIABLES = ("TMPDIR", "TMP", "TEMP")
HYPERTUNE_FILE_VARIABLE = "CLOUD_ML_HP_METRIC_FILE"
CALLER_PYTHON_VARIABLES = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE")
"""Variables of this process that would let a package environment's Python see the caller's
code; replicas and servers that run in one do not inherit them."""


def hypertune_file(folder: Path) -> Path:
    """The cloudml-hypertune metric file of a process whose temporary folder is ``folder``
    (the library's own layout under ``/tmp``: ``hypertune/output.metrics``)."""
    return folder / "hypertune" / "output.metrics"


@dataclass
class JobSandbox:
    """The `/gcs` mapping and temporary folder of one job (see the module).

    Attributes:
        root: The local storage root.
        tmp: The job's temporary folder.
        unavailable: Why namespaces are unavailable here, or None.
        warnings: What the job's log should say about it (once per process).
    """

    root: Path
    tmp: Path
    unavailable: str | None
    warnings: list[str] = field(default_factory=list)
    _guard: gcs_namespace.HostGcsGuard | None = None

    @classmethod
    def open(cls, root: Path, job_dir: Path) -> JobSandbox:
        """Prepares the job's sandbox; call `close` when the job has ended."""
        tmp = job_dir / "tmp"
        shutil.rmtree(tmp, ignore_errors=True)  # a killed attempt's leftovers
        tmp.mkdir(parents=True)
        unavailable = gcs_namespace.namespaces_unavailable(root)
        sandbox = cls(root, tmp, unavailable)
        if unavailable is not None:
            sandbox.warnings = gcs_namespace.warn_once(unavailable)
            sandbox._guard = gcs_namespace.HostGcsGuard.take()
        return sandbox

    def argv(self, argv: list[str]) -> list[str]:
        """The command that runs a replica's `argv` in the sandbox."""
        if self.unavailable is not None:
            return argv
        return gcs_namespace.in_gcs_namespace(argv, self.root)

    def env(self, replica: str) -> dict[str, str]:
        """The temporary folder (made here) and metric file of the replica named ``replica``
        (``workerpool1-0``)."""
        folder = self.tmp / replica
        folder.mkdir(parents=True, exist_ok=True)
        return {
            **dict.fromkeys(TEMP_VARIABLES, str(folder)),
            HYPERTUNE_FILE_VARIABLE: str(hypertune_file(folder)),
        }

    def violation(self) -> str | None:
        """Why the job must fail for what it did outside the root, or None."""
        return None if self._guard is None else self._guard.violation()

    def close(self) -> None:
        """Removes the job's temporary folder."""
        shutil.rmtree(self.tmp, ignore_errors=True)
