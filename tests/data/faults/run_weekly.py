"""Run the drink shops' weekly pipeline locally at test scale; print how it ended as JSON.

Usage: PYTHONPATH=<repo> python run_weekly.py  (VERTEX_LOCAL_ROOT names the shared local
root; the transactions must already be in its bucket).
"""

import io
import json

from tests.examples import DRINK_SHOPS, example_module
from vertex_retrain.cli.compiling import compile_to_dict, default_arguments
from vertex_retrain.cli.local_run import local_arguments, run_pipeline_locally

weekly = example_module(DRINK_SHOPS, "pipelines").weekly
OVERRIDES = {
    "source_uri": str(DRINK_SHOPS / "trainer"),
    "training_args": ["--epochs", "1", "--batch_size", "64"],
}
console = io.StringIO()
outcome = run_pipeline_locally(
    weekly,
    local_arguments(default_arguments(compile_to_dict(weekly)), OVERRIDES),
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
