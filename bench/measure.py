"""Measuring a command as a whole: wall time, CPU time and the peak memory of its process tree.

`resource.getrusage` reports the largest single process's peak, not the sum over a parent and
its worker processes, so `run_measured` samples the resident set of the whole tree from /proc
every 50 ms; the peak it reports is the largest sum it saw (a lower bound on the true peak, by
at most what a 50 ms burst allocates). Also the seed-scale dataset, generated once per machine
and reused by the benchmarks that need it.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SEED_SCALE = {"members": 500_000, "stores": 2_000, "weeks": 156, "seed": 0}
"""The worked example's full scale: about 89.6 million transactions."""
_SAMPLE_S = 0.05


@dataclass(frozen=True)
class Measured:
    """What `run_measured` saw."""

    wall_seconds: float
    cpu_seconds: float  # user + system of the command and every process it waited for
    peak_rss_bytes: int  # largest summed resident set of the process tree
    stdout: str
    stderr: str


def parent_and_start(pid: int | str) -> tuple[int, int] | None:
    """A process's parent pid and start time (clock ticks after boot) from /proc/PID/stat;
    None when it is gone. The command name may hold spaces and parentheses: fields are
    counted from the last ")"."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[1]), int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def resident_bytes(pid: int | str) -> int | None:
    """A process's resident set in bytes from /proc/PID/statm; None when it is gone."""
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return None


def tree_rss(pid: int) -> int:
    """Summed resident set (bytes) of `pid` and all its descendants, from /proc (0 if gone)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        stat = parent_and_start(entry.name)
        if stat is not None:
            children.setdefault(stat[0], []).append(int(entry.name))
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        total += resident_bytes(current) or 0
        stack.extend(children.get(current, []))
    return total


def run_measured(
    argv: Sequence[str], *, env: dict[str, str] | None = None, timeout: float = 1800.0
) -> Measured:
    """Run `argv` (which must exit 0) and measure it.

    Raises:
        RuntimeError: The command failed or ran past `timeout`; its stderr tail is in the message.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(list(argv), cwd=REPO, env=env, stdout=out, stderr=err)
        peak = 0
        try:
            while proc.poll() is None:
                if time.perf_counter() - began > timeout:
                    raise RuntimeError(f"{' '.join(argv)} ran past {timeout:.0f} s")
                peak = max(peak, tree_rss(proc.pid))
                time.sleep(_SAMPLE_S)
        finally:
            # Past the timeout, or this process stopped (SIGTERM, Ctrl-C): the command
            # must not run on alone, writing into folders that are about to be removed.
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        wall = time.perf_counter() - began
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {stderr.strip()[-1500:]}")
    return Measured(wall, cpu, peak, stdout, stderr)


def python_env() -> dict[str, str]:
    """This environment with this checkout's library and trainer importable first (for
    `python -m trainer...`), ahead of the caller's PYTHONPATH: a benchmark measures the code
    beside it, not a trainer installed from another checkout. A trainer's cloudml-hypertune
    report goes to the bench cache, not to the fixed `/tmp/hypertune/output.metrics`, and so
    do its temporary files (`TMPDIR`: torch's compile cache, `/tmp/torchinductor_<user>` by
    default, outlives the process), unless the caller chose a place for either."""
    paths = [str(REPO), str(REPO / "examples" / "drink_shops"), os.environ.get("PYTHONPATH", "")]
    from vertex_retrain.backends.local.jobs.job_sandbox import (
        HYPERTUNE_FILE_VARIABLE,
        hypertune_file,
    )

    temporary = cache_root() / "tmp"
    temporary.mkdir(parents=True, exist_ok=True)
    return {
        HYPERTUNE_FILE_VARIABLE: str(hypertune_file(cache_root())),
        "TMPDIR": str(temporary),
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, paths)),
    }


def cache_root() -> Path:
    """Where benchmarks keep generated datasets between runs (`$VERTEX_RETRAIN_BENCH_DATA`)."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return Path(os.environ.get("VERTEX_RETRAIN_BENCH_DATA", default / "vertex-retrain-bench"))


def dataset_folder(members: int, stores: int, weeks: int, seed: int) -> Path:
    """The cache folder for a synthetic dataset of this scale (the world's default drift:
    `-drift`, so a folder generated before the world drifted is never taken for one)."""
    return cache_root() / f"drinks-{members}x{stores}x{weeks}-seed{seed}-drift"


def ensure_dataset(
    members: int, stores: int, weeks: int, seed: int, *, workers: int = 0
) -> tuple[Path, Measured | None]:
    """A generated dataset of this scale, generating it (measured) unless already there.

    Returns:
        The folder, and the measurement of the generation (None when it was reused).
    """
    from trainer.world import WorldConfig

    folder = dataset_folder(members, stores, weeks, seed)
    info = folder / "generation.json"
    if info.is_file():
        config = json.loads(info.read_text(encoding="utf-8"))["config"]
        wanted = WorldConfig(members=members, stores=stores, weeks=weeks, seed=seed).to_json()
        if all(config.get(key) == value for key, value in wanted.items()):
            return folder, None
    argv = [sys.executable, "-m", "trainer.data", "generate", "--members", str(members),
            "--stores", str(stores), "--weeks", str(weeks), "--seed", str(seed),
            "--workers", str(workers), "--out", str(folder)]  # fmt: skip
    return folder, run_measured(argv, env=python_env())


def stop_command(proc: subprocess.Popen[bytes], grace: float = 60.0) -> None:
    """Stops a command this process started and waits for it: SIGTERM, then SIGKILL after
    `grace` seconds or when this process is stopped again while it waits.

    SIGTERM, not SIGINT: a command started in the background ignores SIGINT (the shell set it
    so, and the child inherits it), while `compile.py run` stops its tasks and replicas on
    SIGTERM.
    """
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    finally:  # also when a second SIGTERM or Ctrl-C ends the wait: never leave it running
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def exit_on_sigterm() -> None:
    """Makes SIGTERM end this process as Ctrl-C would: the ``finally`` blocks run, so the
    command :func:`run_measured` is waiting on is stopped and temporary folders are removed
    (a default SIGTERM ends the process at once and leaves both behind)."""

    def stop(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
