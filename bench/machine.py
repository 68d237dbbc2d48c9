"""The machine a benchmark report was measured on: CPU, cores, memory, versions, date, load."""

from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
from pathlib import Path
from typing import Any


def cpu_model(cpuinfo: str) -> str:
    """The CPU model named in /proc/cpuinfo text ("unknown" when it names none)."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in {"model name", "Model", "Hardware"} and value.strip():
            return value.strip()
    return "unknown"


def memory_gib(meminfo: str) -> float | None:
    """MemTotal from /proc/meminfo text, in GiB (None when absent)."""
    for line in meminfo.splitlines():
        if line.startswith("MemTotal:"):
            kib = int(line.split()[1])
            return round(kib / 1024**2, 1)
    return None


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def describe_machine() -> dict[str, Any]:
    """CPU model, cores, memory, OS, Python and library versions, date and load average.

    Versions come from package metadata, so torch is not imported just to name it.
    """
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    return {
        "cpu": cpu_model(_read("/proc/cpuinfo")) or platform.processor(),
        "cores": os.cpu_count(),
        "memory_gib": memory_gib(_read("/proc/meminfo")),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "torch": _version("torch"),
        "kfp": _version("kfp"),
        "optuna": _version("optuna"),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_average_1m_at_start": round(load[0], 2),
    }
