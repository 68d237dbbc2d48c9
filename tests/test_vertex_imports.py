"""Importing the Vertex backend's modules stays cheap: no aiplatform, GCPC or Cloud Build."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("google.cloud.aiplatform", "google_cloud_pipeline_components", "google.cloud.devtools")


def test_vertex_imports_do_not_load_google_clients() -> None:
    code = (
        "import json, sys\n"
        "import vertex_retrain.backends.vertex, vertex_retrain.backends.vertex.custom_job\n"
        "import vertex_retrain.backends.vertex.tuning_job\n"
        "import vertex_retrain.backends.vertex.model_registry\n"
        "import vertex_retrain.backends.vertex.endpoints\n"
        "import vertex_retrain.backends.vertex.cloud_build\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    loaded = json.loads(result.stdout)
    heavy = [m for m in loaded if m.startswith(HEAVY)]
    assert heavy == []
    assert "vertex_retrain.backends.vertex.custom_job" in loaded  # the probe did import the modules
