"""A checkpointing trainer: sums step**2 over --steps steps, resuming after SIGTERM.

Writes $AIP_CHECKPOINT_DIR/progress.json after every step and a checkpoint every
--checkpoint-every steps; the result goes to $AIP_MODEL_DIR/result.json.
"""

import argparse
import json
import os
import signal
import sys
import time

from fuse import local, write_json

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=30)
parser.add_argument("--step-seconds", type=float, default=0.05)
parser.add_argument("--checkpoint-every", type=int, default=5)
args = parser.parse_args()
ckpt_dir = local(os.environ["AIP_CHECKPOINT_DIR"])
ckpt_file = ckpt_dir / "checkpoint.json"
state = {"step": 0, "total": 0}
if ckpt_file.exists():
    state = json.loads(ckpt_file.read_text())
print(f"starting at step {state['step']}", flush=True)
stop = False


def on_term(signum, frame):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
checkpoint_step = state["step"]
step, total = state["step"], state["total"]


def save_checkpoint():
    global checkpoint_step
    write_json(ckpt_file, {"step": step, "total": total})
    checkpoint_step = step


while step < args.steps:
    if stop:
        save_checkpoint()
        write_json(
            ckpt_dir / "progress.json",
            {"step": step, "checkpoint_step": checkpoint_step, "total_steps": args.steps},
        )
        print(f"SIGTERM: checkpointed at step {step}", flush=True)
        sys.exit(143)
    time.sleep(args.step_seconds)
    total += step * step
    step += 1
    if step % args.checkpoint_every == 0:
        save_checkpoint()
    write_json(
        ckpt_dir / "progress.json",
        {"step": step, "checkpoint_step": checkpoint_step, "total_steps": args.steps},
    )
write_json(local(os.environ["AIP_MODEL_DIR"]) / "result.json", {"total": total, "steps": step})
print(f"done: total={total}", flush=True)
