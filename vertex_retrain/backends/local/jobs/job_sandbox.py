"""What a local job's replicas see of this machine beyond their own folders.

- `/gcs`: `<root>/gcs`, through a namespace of their own (`gcs_namespace`); where namespaces
  are unavailable, the job is warned once per process and fails if it touched the host's
  `/gcs`.
- `TMPDIR` (and `TMP`, `TEMP`): `<root>/jobs/<id>/tmp`, removed when the job ends, so
  nothing a job leaves in its temporary files outlives it or lands outside the root.
- Not this process's `PYTHONPATH` (and friends) when the replica runs in a package
  environment of its own (`python_env`).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from vertex_retrain.backends.local.jobs import gcs_namespace

TEMP_VARIABLES = ("TMPDIR", "TMP", "TEMP")
CALLER_PYTHON_VARIABLES = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE")
"""Variables of this process that would let a package environment's Python see the caller's
code; replicas and servers that run in one do not inherit them."""


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

    @property
    def env(self) -> dict[str, str]:
        """Variables every replica gets."""
        return dict.fromkeys(TEMP_VARIABLES, str(self.tmp))

    def violation(self) -> str | None:
        """Why the job must fail for what it did outside the root, or None."""
        return None if self._guard is None else self._guard.violation()

    def close(self) -> None:
        """Removes the job's temporary folder."""
        shutil.rmtree(self.tmp, ignore_errors=True)
