"""The ``gcp_resources`` output for local jobs, in the shape GCPC's launchers write."""

from __future__ import annotations

import json
from pathlib import Path


def write_local_gcp_resources(path: str, resource_type: str, job_dir: Path) -> None:
    """Records a local job the way GCPC records a Vertex job, pointing at its folder."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(
        json.dumps(
            {"resources": [{"resourceType": resource_type, "resourceUri": job_dir.as_uri()}]}
        ),
        encoding="utf-8",
    )
