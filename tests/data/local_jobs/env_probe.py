"""Write the Vertex variables this replica sees; the primary waits for every replica."""

import json
import os
import sys
import time
from pathlib import Path

from fuse import write_json

NAMES = [
    "AIP_MODEL_DIR",
    "AIP_CHECKPOINT_DIR",
    "AIP_TENSORBOARD_LOG_DIR",
    "CLUSTER_SPEC",
    "TF_CONFIG",
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "RANK",
    "CLOUD_ML_TRIAL_ID",
    "GCS_FUSE_ROOT",
    "CLOUD_ML_JOB_ID",
    "PROBE_EXTRA",
    "TMPDIR",
    "CLOUD_ML_HP_METRIC_FILE",
]
out = Path(os.environ["PROBE_DIR"])
spec = json.loads(os.environ["CLUSTER_SPEC"])
task = spec["task"]
write_json(
    out / f"{task['type']}-{task['index']}.json",
    {"env": {n: os.environ.get(n) for n in NAMES}, "argv": sys.argv[1:], "pid": os.getpid()},
)
print(f"probe {task['type']}-{task['index']} done")
if task["type"] == "workerpool0":
    expected = sum(len(hosts) for hosts in spec["cluster"].values())
    while len(list(out.glob("workerpool*.json"))) < expected:
        time.sleep(0.02)
