"""The figures `bench.bench_warm_start` keeps of each finished step, and where.

A seed at the seeds' scale takes hours of a core, more than a session of the 2-core machine
for three seeds, so each finished step's figures (a few hundred bytes) are kept: at the seeds'
scale in the repository, where a commit carries them to the next machine; at other scales in
the bench cache. The data, encoded rows and models a seed needs while it runs live in the
bench cache only (:func:`state_folder`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.bench_quality import trainer_digest
from bench.measure import SEED_SCALE, cache_root
from vertex_retrain.atomic_files import atomic_write_json

RESULTS_ROOT = Path(__file__).resolve().parent / "results" / "warm-start"
"""Where each world's finished steps at the seeds' scale are kept (figures only, a few hundred
bytes a step)."""


def read_kept(path: Path) -> dict[str, Any] | None:
    """A kept step's figures, or None when the step is not kept."""
    return dict(json.loads(path.read_text(encoding="utf-8"))) if path.is_file() else None


def kept_step(path: Path, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """A step's result, kept from an earlier run or computed now and kept: a seed at the
    seeds' scale takes hours, so a stopped run resumes at the step it was in."""
    kept = read_kept(path)
    if kept is not None:
        return kept
    result = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, result)  # whole or absent: a stop while writing keeps nothing
    return result


def _key(scale: dict[str, int], seed: int) -> str:
    return f"{scale['members']}x{scale['stores']}x{scale['weeks']}-seed{seed}-{trainer_digest()}"


def at_seed_scale(scale: dict[str, int]) -> bool:
    """Whether `scale` (members, stores, weeks) is the worked example's full scale."""
    return all(scale[key] == SEED_SCALE[key] for key in scale)


def steps_folder(scale: dict[str, int], seed: int) -> Path:
    """Where one world's finished steps (figures only) are kept, keyed by scale, seed and
    trainer code: at the seeds' scale under :data:`RESULTS_ROOT`, in the repository (hours
    of a core a seed, so worth a commit); at other scales in the bench cache (minutes)."""
    root = RESULTS_ROOT if at_seed_scale(scale) else cache_root() / "warm-start-steps"
    return root / _key(scale, seed)


def state_folder(scale: dict[str, int], seed: int) -> Path:
    """Where one world's data, encoded rows and models live while it runs (the bench cache)."""
    return cache_root() / "warm-start" / _key(scale, seed)


def kept_seed(scale: dict[str, int], seed: int, next_weeks: int) -> dict[str, Any]:
    """The seed's figures as kept: the first champion and every week up to `next_weeks` with
    both kinds kept (a stopped run's weeks so far)."""
    steps = steps_folder(scale, seed)
    first = read_kept(steps / "first.json")
    weeks = []
    for week in range(1, next_weeks + 1):
        full = read_kept(steps / f"week{week}-full.json")
        warm = read_kept(steps / f"week{week}-warm.json")
        if full is not None and warm is not None:
            weeks.append({"week": week, "full": full, "warm": warm})
    load = first["load_at_start"] if first else None
    return {"seed": seed, "scale": scale, "load_at_start": load, "first": first, "weeks": weeks}


def common_weeks(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each seed's result with only the weeks every seed has (pure)."""
    shared = set.intersection(*({w["week"] for w in r["weeks"]} for r in results))
    return [{**r, "weeks": [w for w in r["weeks"] if w["week"] in shared]} for r in results]
