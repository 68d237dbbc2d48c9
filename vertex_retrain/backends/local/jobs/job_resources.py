"""The ``gcp_resources`` output for local jobs, in the shape GCPC's launchers write."""

from __future__ import annotations

from pathlib import Path

from vertex_retrain.atomic_files import atomic_write_json


def write_local_gcp_resources(path: str, resource_type: str, job_dir: Path) -> None:
    """Records a local job the way GCPC records a Vertex job, pointing at its folder.

    Args:
        path: The task's ``gcp_resources`` output file.
        resource_type: ``CustomJob`` or ``HyperparameterTuningJob``.
        job_dir: The job's folder, ``<root>/jobs/<job id>``.
    """
    atomic_write_json(
        Path(path),
        {"resources": [{"resourceType": resource_type, "resourceUri": job_dir.as_uri()}]},
    )
