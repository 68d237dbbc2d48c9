"""A tuning trial that misbehaves on request: --behaviour picks how it ends.

ok: reports accuracy = --x.  crash: exits 1 without reporting.  hang: sleeps past any trial
timeout.  silent: exits 0 without reporting.  report_then_crash: reports accuracy 100 (better
than any ok trial), then exits 1.  report_then_hang: reports 100, then hangs.
"""

import argparse
import sys
import time

import hypertune

parser = argparse.ArgumentParser()
parser.add_argument("--behaviour", required=True)
parser.add_argument("--x", type=float, default=0.0)
args = parser.parse_args()
tracker = hypertune.HyperTune()
print(f"trial behaviour={args.behaviour} x={args.x}", flush=True)
if args.behaviour == "ok":
    tracker.report_hyperparameter_tuning_metric("accuracy", args.x, global_step=1)
elif args.behaviour == "crash":
    sys.exit(1)
elif args.behaviour == "hang":
    time.sleep(600)
elif args.behaviour.startswith("report_then_"):
    tracker.report_hyperparameter_tuning_metric("accuracy", 100.0, global_step=1)
    if args.behaviour == "report_then_crash":
        sys.exit(1)
    time.sleep(600)
elif args.behaviour != "silent":
    sys.exit(f"unknown --behaviour {args.behaviour!r}")
