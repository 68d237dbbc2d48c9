"""Time-based split into three periods, stored as a dataset manifest.

Random splits of a time series leak the future into training. The manifest names three parts
in time order: `train` (the weeks the model learns from), `selection` (the weeks after them,
for what training chooses: the tuning objective and the metrics training reports) and `gate`
(the newest weeks, on which the evaluation job judges the candidate against the champion and
the references; nothing in training or tuning reads them). CLI: `python -m trainer.split
--data DIR --out DIR [--selection_weeks 1] [--gate_weeks 1]`.

The manifest's format is a contract with vertex-retrain (docs/components.md#dataset-manifest):
the pipeline's `prepare_dataset` writes the same file from the example's dataset declaration
(examples/drink_shops/dataset.yaml), and this module reads it (`load_manifest`) and writes it
for runs without the pipeline. A period is named by its first day; `week_of` turns it back into
the generator's week index.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import sys
from collections.abc import Sequence
from typing import Any

from trainer.data import FORMAT as DATA_FORMAT
from trainer.paths import atomic_write_json, resolve, sha256_file
from trainer.world import START_DATE

MANIFEST_FORMAT = "vertex-retrain-dataset-manifest/v2"
MANIFEST_NAME = "manifest.json"
PARTS = ("train", "selection", "gate")


def period_of(week: int) -> str:
    """The first day of generator week ``week``, as a manifest names its period."""
    return (START_DATE + dt.timedelta(days=7 * week)).isoformat()


def week_of(period: str) -> int:
    """The generator's week index of a manifest period (its first day, ISO)."""
    return (dt.date.fromisoformat(period) - START_DATE).days // 7


def part_weeks(manifest: dict[str, Any], part: str) -> list[int]:
    """The week indices of a manifest part (``train``, ``selection`` or ``gate``)."""
    return [week_of(period) for period in manifest_part(manifest, part)["periods"]]


def manifest_part(manifest: dict[str, Any], part: str) -> dict[str, Any]:
    """A part of the manifest, or a ValueError saying why it is not there.

    A training dataset (the pipeline's `training_dataset`) withholds the gate period: its
    manifest has no `gate` part, so a training or tuning job cannot read it.
    """
    if part in manifest:
        found: dict[str, Any] = manifest[part]
        return found
    if part == "gate" and "withheld" in manifest:
        raise ValueError(
            "this dataset withholds its gate period (a training dataset); evaluate on the "
            "prepared dataset that holds the gate part"
        )
    raise ValueError(f"the manifest has no {part!r} part; expected the parts {list(PARTS)}")


def plan_time_split(data_dir: str, selection_weeks: int = 1, gate_weeks: int = 1) -> dict[str, Any]:
    """Build the manifest for `data_dir` without writing anything.

    Args:
        data_dir: a folder written by `trainer.data generate` (local, `gs://` or `/gcs/`).
        selection_weeks: weeks after the training weeks for the tuning objective (>= 1 here:
            the trainer reports its metrics on them).
        gate_weeks: the newest weeks, held out for the evaluation job.

    Returns:
        The manifest: `data_uri`, `train`/`selection`/`gate` (periods, files, rows),
        catalogue paths, schema, seed and a `content_hash` over every file's SHA-256.

    Raises:
        FileNotFoundError: `data_dir` has no generation.json.
        ValueError: the counts leave no training week, or the data is not ours.
    """
    root = resolve(data_dir)
    info_path = root / "generation.json"
    if not info_path.is_file():
        raise FileNotFoundError(
            f"{data_dir!r} has no generation.json; expected a folder written by "
            "`python -m trainer.data generate --out DIR`"
        )
    info = json.loads(info_path.read_text(encoding="utf-8"))
    if info.get("format") != DATA_FORMAT:
        raise ValueError(f"{info_path}: format {info.get('format')!r}, expected {DATA_FORMAT!r}")
    weeks = sorted(info["weeks"], key=lambda w: w["week"])
    if selection_weeks < 1 or gate_weeks < 1 or selection_weeks + gate_weeks >= len(weeks):
        raise ValueError(
            f"selection_weeks ({selection_weeks}) and gate_weeks ({gate_weeks}) must each be "
            f">= 1 and leave at least one training week of the {len(weeks)} weeks of data"
        )
    gate_cut = len(weeks) - gate_weeks
    cut = gate_cut - selection_weeks
    files: dict[str, str] = {}
    for rel in [w["path"] for w in weeks] + [info["drinks_path"], info["stores_path"]]:
        path = root / rel
        if not path.is_file():
            raise FileNotFoundError(f"{path} is listed in generation.json but missing; regenerate")
        files[rel] = sha256_file(path)
    content_hash = hashlib.sha256(
        "".join(f"{rel}:{digest}\n" for rel, digest in sorted(files.items())).encode()
    ).hexdigest()

    def part(chosen: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "periods": [period_of(w["week"]) for w in chosen],
            "files": [w["path"] for w in chosen],
            "rows": sum(w["rows"] for w in chosen),
        }

    return {
        "format": MANIFEST_FORMAT,
        "data_uri": str(data_dir),
        "seed": info["config"]["seed"],
        "generation": info["config"],
        "start_date": info["start_date"],
        "schema": info["schema"],
        "period": "week",
        "train": part(weeks[:cut]),
        "selection": part(weeks[cut:gate_cut]),
        "gate": part(weeks[gate_cut:]),
        "dimensions": {"drinks": info["drinks_path"], "stores": info["stores_path"]},
        "sha256": files,
        "content_hash": content_hash,
    }


def make_time_split(
    data_dir: str, out_dir: str, selection_weeks: int = 1, gate_weeks: int = 1
) -> dict[str, Any]:
    """Plan the split and write it atomically to `out_dir/manifest.json`.

    The manifest references the data files relative to `data_uri` (kept as given, e.g. a
    `gs://` URI), so a job anywhere can resolve them with `trainer.paths.resolve`.

    Args:
        data_dir: folder written by `trainer.data generate`.
        out_dir: folder for `manifest.json` (created if missing).
        selection_weeks: weeks for the tuning objective, after the training weeks.
        gate_weeks: the newest weeks, for the evaluation job.

    Returns:
        The manifest dict (see `plan_time_split`).
    """
    manifest = plan_time_split(data_dir, selection_weeks, gate_weeks)
    atomic_write_json(resolve(out_dir) / MANIFEST_NAME, manifest)
    return manifest


def load_manifest(path: str) -> dict[str, Any]:
    """Read a manifest from a `manifest.json` path or a folder holding one.

    A folder written by `trainer.data generate` (no manifest yet) is split on the fly with one
    selection and one gate week, so a quick run needs no separate split step.

    Args:
        path: manifest file, folder with `manifest.json`, or raw dataset folder.

    Raises:
        FileNotFoundError: nothing usable at `path`.
        ValueError: the file is not a dataset manifest.
    """
    local = resolve(path)
    if local.is_dir() and (local / MANIFEST_NAME).is_file():
        local = local / MANIFEST_NAME
    elif local.is_dir():
        return plan_time_split(path)
    if not local.is_file():
        raise FileNotFoundError(
            f"no dataset at {path!r}: pass a manifest.json from `python -m trainer.split` or a "
            "folder from `python -m trainer.data generate`"
        )
    manifest: dict[str, Any] = json.loads(local.read_text(encoding="utf-8"))
    if manifest.get("format") != MANIFEST_FORMAT:
        raise ValueError(
            f"{path!r}: format {manifest.get('format')!r}, expected {MANIFEST_FORMAT!r}"
        )
    return manifest


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: `python -m trainer.split --data DIR --out DIR [--selection_weeks N --gate_weeks N]`."""
    parser = argparse.ArgumentParser(prog="python -m trainer.split", description=__doc__)
    parser.add_argument("--data", required=True, help="folder from `trainer.data generate`")
    parser.add_argument("--out", required=True, help="folder for manifest.json")
    parser.add_argument("--selection_weeks", type=int, default=1)
    parser.add_argument("--gate_weeks", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        manifest = make_time_split(args.data, args.out, args.selection_weeks, args.gate_weeks)
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    train = part_weeks(manifest, "train")
    print(
        f"train weeks {train[0]}..{train[-1]} ({manifest['train']['rows']} rows), selection "
        f"weeks {part_weeks(manifest, 'selection')} ({manifest['selection']['rows']} rows), "
        f"gate weeks {part_weeks(manifest, 'gate')} ({manifest['gate']['rows']} rows); "
        f"content hash {manifest['content_hash'][:12]}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
