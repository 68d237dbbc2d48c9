"""What a replica's exit code most likely means, and what to do about it."""

from __future__ import annotations

import signal

TRACEBACK = "Traceback (most recent call last):"
"""The line a Python traceback starts with."""

_ADVICE = {
    2: "exit code 2 usually means bad command-line arguments (argparse exits with 2): check "
    "`args` in the worker pool spec, and for tuning the `--name=value` parameter flags",
    126: "exit code 126: the command was found but is not executable; check its permissions "
    "or run it through the interpreter",
    127: "exit code 127: command not found; the entrypoint is not on PATH in this "
    "environment (check containerSpec.command / the Dockerfile ENTRYPOINT)",
    134: "SIGABRT (134): native code aborted, often a failed C++ assertion, a CUDA error or "
    "an NCCL failure; read the log lines just before the abort",
    137: "SIGKILL (137): most often out of memory (the kernel's OOM killer). Raise "
    "machineSpec.machineType to one with more memory (e.g. n1-highmem-*), or lower the batch "
    "size / number of data-loader workers",
    139: "SIGSEGV (139): segmentation fault in native code; suspect a mismatched "
    "torch/CUDA build or a compiled extension",
    143: "SIGTERM (143): the replica was terminated from outside (preemption, a kill, a "
    "scheduler). Checkpoint on SIGTERM so a restart can resume",
}


def normalise_exit_code(returncode: int) -> tuple[int, str | None]:
    """Convert a `Popen.returncode` to a container-style exit code plus the signal name.

    A process killed by signal N has returncode -N; containers report 128 + N.

    Returns:
        (exit code, signal name or None).
    """
    if returncode < 0:
        number = -returncode
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return 128 + number, name
    if returncode > 128:
        try:
            return returncode, signal.Signals(returncode - 128).name
        except ValueError:
            return returncode, None
    return returncode, None


def python_error(log_text: str) -> str | None:
    """Return the last Python traceback in `log_text` (from its header to the error line)."""
    start = log_text.rfind(TRACEBACK)
    if start < 0:
        return None
    lines = log_text[start:].rstrip().splitlines()
    # Keep the traceback compact: the header, the innermost frames, and the exception.
    if len(lines) > 12:
        lines = [lines[0], "  ...", *lines[-10:]]
    return "\n".join(lines)


def advice_for(exit_code: int, log_text: str) -> str:
    """Explain an exit code for a human, using the log for Python errors.

    Args:
        exit_code: Container-style exit code (see `normalise_exit_code`).
        log_text: The tail of the failing replica's log.

    Returns:
        One paragraph of advice; generic when the code says nothing specific.
    """
    if exit_code == 1:
        trace = python_error(log_text)
        if trace:
            last = trace.splitlines()[-1]
            return f"the Python code raised {last}\n{trace}"
        return "exit code 1: the program reported a generic error; read the log tail"
    if exit_code in _ADVICE:
        return _ADVICE[exit_code]
    if exit_code > 128:
        return f"the replica died from signal {exit_code - 128}; read the log tail"
    return f"the replica exited with code {exit_code}; read the log tail for its own message"
