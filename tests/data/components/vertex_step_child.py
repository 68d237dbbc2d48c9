"""Runs the train or tune step on the Vertex backend against a fake JobService that never ends.

Used by tests/test_components_vertex.py to send a real SIGTERM to a process running a step:

    python vertex_step_child.py train|tune CALLS_JSONL GCP_RESOURCES REPORT_HTML

Every client call is appended to CALLS_JSONL. The job stays RUNNING, so the process only
ends when it is signalled; exit status 3 would mean the step returned, which it must not.
"""

import sys

from google_cloud_pipeline_components.container.v1.gcp_launcher import job_remote_runner

from tests.fakes.vertex_jobs import FakeJobServiceClient
from vertex_retrain.backends.vertex.backend import VertexBackend
from vertex_retrain.steps.job_request import TrainingRequest
from vertex_retrain.steps.train import train
from vertex_retrain.steps.tune import TuningRequest, tune

kind, record_path, gcp_resources, report = sys.argv[1:5]
job_remote_runner._POLLING_INTERVAL_IN_SECONDS = 0.05
fake = FakeJobServiceClient(states=["JOB_STATE_RUNNING"], record_path=record_path)
# The fake stands in at the JobServiceClient boundary, passed to the backend's constructor.
backend = VertexBackend("shop", "europe-west4", job_client_factory=fake.factory())

request = TrainingRequest(
    backend="vertex",
    display_name="sigterm",
    base_output_directory="gs://shop/runs/sigterm",
    image_uri="europe-west4-docker.pkg.dev/shop/training/tiny@sha256:" + "a" * 64,
    machine_type="n1-standard-4",
    project="shop",
    location="europe-west4",
)
if kind == "train":
    train(request, gcp_resources_path=gcp_resources, request_key="run-9-train", backend=backend)
else:
    study = TuningRequest(
        trial=request,
        parameter_specs=[{"parameterId": "x", "doubleValueSpec": {"minValue": 0, "maxValue": 1}}],
        metric_id="score",
        max_trial_count=2,
        parallel_trial_count=1,
    )
    tune(
        study,
        gcp_resources_path=gcp_resources,
        report_path=report,
        request_key="run-9-tune",
        backend=backend,
    )
sys.exit(3)
