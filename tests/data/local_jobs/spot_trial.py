"""A tuning trial for the Spot fallback rehearsal: metric = -(x - 0.3)**2, via hypertune.

Trial 1 of a study reports at once; every other trial first works --seconds, so a Spot
preemption rehearsal shorter than that preempts it every time (STOCKOUT on the seventh).
"""

import argparse
import os
import time

import hypertune
from fuse import local, write_json

parser = argparse.ArgumentParser()
parser.add_argument("--x", type=float, required=True)
parser.add_argument("--seconds", type=float, default=3.0)
args = parser.parse_args()
trial = os.environ.get("CLOUD_ML_TRIAL_ID", "1")
if trial != "1":
    time.sleep(args.seconds)
metric = -((args.x - 0.3) ** 2)
write_json(local(os.environ["AIP_MODEL_DIR"]) / "params.json", {"x": args.x, "trial": trial})
hypertune.HyperTune().report_hyperparameter_tuning_metric("accuracy", metric)
print(f"trial {trial} metric={metric}", flush=True)
