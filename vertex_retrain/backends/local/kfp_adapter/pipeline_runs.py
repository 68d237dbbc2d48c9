"""The outputs of a local pipeline run's tasks, read from kfp.local's executor output files.

kfp.local leaves ``<pipeline root>/<run>/<task>/executor_output.json`` for each task; the same
facts the Vertex backend reads from a PipelineJob's task details.
"""

from __future__ import annotations

import json
from pathlib import Path

from vertex_retrain.backends.base import TaskOutputs
from vertex_retrain.backends.local.kfp_adapter.task_cache import CACHED_FROM_FILE


def read_local_task_outputs(run_dir: Path) -> dict[str, TaskOutputs]:
    """Parses kfp.local's executor output files under one run's folder.

    Args:
        run_dir: ``<pipeline root>/<run name>``.

    Returns:
        Task name -> output parameters and artifacts; unreadable files are skipped.
    """
    outputs: dict[str, TaskOutputs] = {}
    for path in sorted(run_dir.glob("*/executor_output.json")):
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        task = TaskOutputs(
            parameters=dict(document.get("parameterValues", {})),
            cached=(path.parent / CACHED_FROM_FILE).is_file(),
        )
        for name, listing in document.get("artifacts", {}).items():
            artifacts = listing.get("artifacts", [])
            if artifacts:
                task.artifacts[name] = {
                    "uri": artifacts[0].get("uri", ""),
                    "metadata": dict(artifacts[0].get("metadata", {})),
                }
        outputs[path.parent.name] = task
    return outputs
