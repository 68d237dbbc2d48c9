"""Run weekly-retraining locally at test scale and print how it ended as one JSON line.

Usage: PYTHONPATH=<repo> python run_weekly.py  (VERTEX_LOCAL_ROOT names the shared local
root; the transactions must already be in its bucket).
"""

import io
import json
from pathlib import Path

from vertex_retrain.cli.compiling import compile_to_dict, default_arguments
from vertex_retrain.cli.local_run import local_arguments, run_pipeline_locally
from vertex_retrain.pipelines.weekly import weekly_retraining

REPO = Path(__file__).resolve().parents[3]
OVERRIDES = {
    "source_uri": str(REPO / "examples" / "drink_shops" / "trainer"),
    "epochs": 1,
    "batch_size": 64,
}
console = io.StringIO()
outcome = run_pipeline_locally(
    weekly_retraining,
    local_arguments(default_arguments(compile_to_dict(weekly_retraining)), OVERRIDES),
    console=console,
)
summary = outcome.summary or {}
print(
    json.dumps(
        {
            "succeeded": outcome.succeeded,
            "refused": outcome.refused,
            "run_dir": str(outcome.run_dir),
            "decision": summary.get("decision"),
            "console_tail": console.getvalue()[-2000:],
        }
    )
)
