"""A tiny program that keeps vertex-retrain's evaluation contract and nothing more.

It reads ``model.json`` (``{"x": ...}``, as ``tiny_trainer`` writes it) from the candidate and
champion folders and reports ``score = x`` for each, with a reference ``constant`` whose
``score`` is 0.1.
``--break`` makes it break the contract on purpose: ``nan`` writes a non-finite score,
``silent`` writes nothing, ``exit`` fails with exit status 3.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def resolve(uri: str) -> Path:
    """The file system path of a ``gs://``, ``/gcs/`` or local location."""
    fuse_root = os.environ.get("GCS_FUSE_ROOT", "/gcs")
    for prefix in ("gs://", "/gcs/"):
        if uri.startswith(prefix):
            return Path(fuse_root) / uri[len(prefix) :]
    return Path(uri)


def score(model_dir: str) -> float:
    """The model's ``x``."""
    return float(json.loads((resolve(model_dir) / "model.json").read_text())["x"])


def main(argv: list[str] | None = None) -> int:
    """Scores the models named by the contract's flags and writes the metrics file."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--candidate-model-dir", required=True)
    parser.add_argument("--champion-model-dir", default="")
    parser.add_argument("--data", required=True)
    parser.add_argument("--metrics-output", required=True)
    parser.add_argument("--break", dest="breaks", default="", choices=["", "nan", "silent", "exit"])
    args = parser.parse_args(argv)
    if args.breaks == "exit":
        print("tiny_evaluator: failing on purpose", file=sys.stderr)
        return 3
    if args.breaks == "silent":
        return 0
    candidate = float("nan") if args.breaks == "nan" else score(args.candidate_model_dir)
    report = {
        "format": "vertex-retrain-evaluation-metrics/v1",
        "candidate": {"score": candidate},
        "champion": {"score": score(args.champion_model_dir)} if args.champion_model_dir else None,
        "references": {"constant": {"score": 0.1}},
        "data": args.data,
    }
    output = resolve(args.metrics_output)
    output.parent.mkdir(parents=True, exist_ok=True)
    temporary = output.with_name(output.name + ".tmp")
    temporary.write_text(json.dumps(report), encoding="utf-8")
    os.replace(temporary, output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
