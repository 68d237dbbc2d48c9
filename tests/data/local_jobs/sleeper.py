"""Start a grandchild, record both pids, then sleep; --ignore-term ignores SIGTERM."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

if "--ignore-term" in sys.argv:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
pids = Path(os.environ["PROBE_DIR"]) / f"pids-{os.getpid()}.txt"
pids.parent.mkdir(parents=True, exist_ok=True)
pids.write_text(f"{os.getpid()}\n{child.pid}\n")
print("sleeping", flush=True)
time.sleep(600)
