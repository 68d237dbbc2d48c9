"""A tuning trial that ends the way --behaviour says (fault-injection fixture).

ok:<value>: reports accuracy = value.  crash: exits 1 without reporting.  hang: sleeps past any
trial timeout.  silent: exits 0 without reporting.  report_then_crash: reports accuracy 100
(better than any ok trial), then exits 1.  report_then_hang: reports 100, then hangs.
"""

import argparse
import sys
import time

import hypertune

parser = argparse.ArgumentParser()
parser.add_argument("--behaviour", required=True)
args = parser.parse_args()
tracker = hypertune.HyperTune()
print(f"trial behaviour={args.behaviour}", flush=True)
if args.behaviour.startswith("ok:"):
    tracker.report_hyperparameter_tuning_metric("accuracy", float(args.behaviour[3:]))
elif args.behaviour == "crash":
    sys.exit(1)
elif args.behaviour == "hang":
    time.sleep(600)
elif args.behaviour.startswith("report_then_"):
    tracker.report_hyperparameter_tuning_metric("accuracy", 100.0)
    if args.behaviour == "report_then_crash":
        sys.exit(1)
    time.sleep(600)
elif args.behaviour != "silent":
    sys.exit(f"unknown --behaviour {args.behaviour!r}")
