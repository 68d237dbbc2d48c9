"""Fail in the requested way: --mode=sigkill | raise | exit:N (after an optional delay)."""

import argparse
import os
import signal
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--mode", required=True)
parser.add_argument("--delay", type=float, default=0.0)
args = parser.parse_args()
print(f"about to fail with {args.mode}", flush=True)
time.sleep(args.delay)
if args.mode == "sigkill":
    os.kill(os.getpid(), signal.SIGKILL)
elif args.mode == "raise":
    raise ValueError("the loss became NaN at step 3")
elif args.mode.startswith("exit:"):
    sys.exit(int(args.mode.split(":", 1)[1]))
