"""The flags ``preflight`` needs to call a pipeline ready, as ``run`` needs them to submit it:
a runtime service account and a ``gs://`` pipeline root."""

from __future__ import annotations

SUBMISSION_FLAGS = (
    "--service-account",
    "retrain@my-project.iam.gserviceaccount.com",
    "--pipeline-root",
    "gs://my-bucket/root",
)
