"""A tuning trial: metric = -(x - 0.3)**2 - penalty(optimizer), reported via hypertune.

--optimizer=sgd takes --momentum (a conditional parameter); x == 0.9 crashes and
x == 0.7 leaves the metric unreported.
"""

import argparse
import os

import hypertune
from fuse import local, write_json

parser = argparse.ArgumentParser()
parser.add_argument("--x", type=float, required=True)
parser.add_argument("--optimizer", default="adam")
parser.add_argument("--momentum", type=float, default=None)
parser.add_argument("--layers", type=int, default=1)
args = parser.parse_args()
if args.optimizer == "sgd" and args.momentum is None:
    raise SystemExit("--momentum is required with sgd")
if args.optimizer != "sgd" and args.momentum is not None:
    raise SystemExit("--momentum was passed without sgd: conditional spec not honoured")
if abs(args.x - 0.9) < 1e-9:
    raise RuntimeError("diverged at x=0.9")
metric = -((args.x - 0.3) ** 2) - (0.1 if args.optimizer == "sgd" else 0.0) - 0.01 * args.layers
write_json(local(os.environ["AIP_MODEL_DIR"]) / "params.json", vars(args))
if abs(args.x - 0.7) > 1e-9:
    tracker = hypertune.HyperTune()
    tracker.report_hyperparameter_tuning_metric("accuracy", metric - 1.0, global_step=1)
    tracker.report_hyperparameter_tuning_metric("accuracy", metric, global_step=2)
print(f"metric={metric}")
