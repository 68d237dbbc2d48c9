"""The ``gcp_resources`` output of register and deploy, whichever backend ran them."""

from __future__ import annotations

import json
from pathlib import Path

EMPTY: dict[str, list[dict[str, str]]] = {"resources": []}
"""What a task records when it started no Vertex operation (a local run, or a re-run that
found its version or deployment done)."""


def ensure_recorded(path: str) -> None:
    """Leaves ``gcp_resources`` as the backend wrote it, or writes :data:`EMPTY` there.

    KFP expects every declared output; the Vertex backend writes the operation it started
    (:mod:`vertex_retrain.backends.vertex.operations`), and nothing else writes the file.

    Args:
        path: The task's ``gcp_resources`` output file (empty: nothing to write).
    """
    if not path or Path(path).is_file():
        return
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(EMPTY), encoding="utf-8")
