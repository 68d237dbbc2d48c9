"""Write argv, the package location and torch's presence into the model dir."""

import importlib.util
import json
import os
import sys
from pathlib import Path

root = os.environ["GCS_FUSE_ROOT"]
model_dir = Path(root) / os.environ["AIP_MODEL_DIR"][len("gs://") :]
model_dir.mkdir(parents=True, exist_ok=True)
(model_dir / "run.json").write_text(
    json.dumps(
        {
            "argv": sys.argv[1:],
            "module_file": __file__,
            "prefix": sys.prefix,
            "has_torch": importlib.util.find_spec("torch") is not None,
        }
    )
)
print("tinypkg ran", flush=True)
