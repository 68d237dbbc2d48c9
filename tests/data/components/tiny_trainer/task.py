"""A tiny training program that follows the Vertex AI training contract and nothing more.

It writes ``model.json`` into ``AIP_MODEL_DIR`` and reports ``score = x`` with
cloudml-hypertune, so a tuning study has a known best trial. ``--fail_above`` makes trials
with a larger ``x`` fail (exit status 3) before they report, to show that a failed trial
never wins however good its parameters look.

Cloud Storage paths: ``gs://B/P`` and ``/gcs/B/P`` map to ``$GCS_FUSE_ROOT/B/P`` when the
local executor sets ``GCS_FUSE_ROOT``; on Vertex ``/gcs`` is the Cloud Storage FUSE mount.
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


def main(argv: list[str] | None = None) -> int:
    """Trains nothing: records its arguments as the model and reports ``score = x``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--x", type=float, default=0.0, help="the only parameter")
    parser.add_argument("--fail_above", type=float, default=None, help="fail when x exceeds it")
    parser.add_argument("--data", default="", help="dataset folder (recorded only)")
    args = parser.parse_args(argv)
    if args.fail_above is not None and args.x > args.fail_above:
        print(f"tiny_trainer: x={args.x} is above {args.fail_above}; failing", file=sys.stderr)
        return 3
    model_dir = resolve(os.environ["AIP_MODEL_DIR"])
    model_dir.mkdir(parents=True, exist_ok=True)
    model = {"x": args.x, "data": args.data, "trial": os.environ.get("CLOUD_ML_TRIAL_ID", "")}
    temporary = model_dir / "model.json.tmp"
    temporary.write_text(json.dumps(model), encoding="utf-8")
    os.replace(temporary, model_dir / "model.json")
    import hypertune

    hypertune.HyperTune().report_hyperparameter_tuning_metric(
        hyperparameter_metric_tag="score", metric_value=args.x, global_step=1
    )
    print(f"tiny_trainer: wrote {model_dir / 'model.json'} with score {args.x}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
