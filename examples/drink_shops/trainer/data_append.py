"""The next week of a synthetic dataset: `python -m trainer.data append --out DIR`.

A scheduled pipeline trains on a dataset that grows by one week at a time. `append_week`
draws week W (W = the newest week + 1) from the same world (`generation.json`'s `config`, so
the same members, shops and drinks) and its own seeded generator, writes it as one more
weekly file and lists it in `generation.json`. `config.weeks` stays the world's: its drinks
were launched within those weeks, and the appended weeks come after them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trainer.data import FORMAT, _write_week
from trainer.paths import atomic_write_json, resolve
from trainer.world import WorldConfig, build_world


def append_week(out: str | Path) -> dict[str, Any]:
    """Append the next week to a dataset written by `generate` (or appended to before).

    Args:
        out: the dataset folder (local, `gs://` or `/gcs/`).

    Returns:
        The new week's entry of `generation.json`: week, path, rows and bytes.

    Raises:
        FileNotFoundError: `out` has no generation.json.
        ValueError: generation.json is not this generator's.
    """
    root = resolve(out)
    info_path = root / "generation.json"
    if not info_path.is_file():
        raise FileNotFoundError(
            f"{out!s} has no generation.json; write the dataset first with "
            "`python -m trainer.data generate ... --out DIR`"
        )
    info: dict[str, Any] = json.loads(info_path.read_text(encoding="utf-8"))
    if info.get("format") != FORMAT:
        raise ValueError(f"{info_path}: format {info.get('format')!r}, expected {FORMAT!r}")
    world = build_world(WorldConfig(**info["config"]))
    week = max(entry["week"] for entry in info["weeks"]) + 1
    entry = _write_week(world, root, week)
    info["weeks"].append(entry)
    info["rows"] += entry["rows"]
    info["bytes"] += entry["bytes"]
    info["bytes_per_row"] = info["bytes"] / info["rows"] if info["rows"] else 0.0
    # The week's file is in place before generation.json names it.
    atomic_write_json(info_path, info)
    return entry
