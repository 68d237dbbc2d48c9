"""Helpers shared by tests/test_faults_*.py: find the processes a fault test started."""

from __future__ import annotations

import time
from pathlib import Path

TAG_VARIABLE = "FAULT_TAG"
"""Environment variable a fault test gives every process it starts, to find them in /proc."""


def tagged_processes(tag: str) -> dict[int, dict[str, str]]:
    """Live (non-zombie) processes whose environment has FAULT_TAG=tag, with that environment."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # gone meanwhile, or not ours to read
        items = raw.decode(errors="replace").split("\0")
        env = dict(item.split("=", 1) for item in items if "=" in item)
        if env.get(TAG_VARIABLE) == tag and state not in {"Z", "X"}:
            found[int(entry.name)] = env
    return found


def wait_until_gone(tag: str, seconds: float = 10.0) -> dict[int, dict[str, str]]:
    """Wait for every tagged process to exit; return those still alive after `seconds`."""
    deadline = time.monotonic() + seconds
    while (alive := tagged_processes(tag)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive
