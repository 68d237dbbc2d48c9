"""The plan of ``make smoke-vertex`` (:mod:`vertex_smoke.main`): pure, decided before anything
is created, and the clients its apply step (:mod:`vertex_smoke.apply`) uses.

``make smoke-vertex``: one real, small run of the weekly pipeline on Vertex AI, and everything
it made deleted.

Opt-in and never run by the tests or CI: it needs a project, credentials, a bucket and money.
The plan (:func:`plan_smoke`) is pure and tested offline; :func:`apply_smoke` carries it out
through injected clients:

1. build the component image and the serving image with Cloud Build (skipped when unchanged);
2. generate a small sample dataset and upload it with the trainer's source, under one prefix
   of the bucket that belongs to this smoke run, and load it into a BigQuery dataset of this
   run's own name in the run's region (load jobs, which are free);
3. run the example's weekly pipeline reading that dataset (``extract-window`` queries BigQuery
   through the official client, as the pipeline's service account, and the run summary shows
   the bytes billed) (``weekly_retraining`` configured in ``pipelines.py``),
   the preflight first: the run-summary exit handler, the data gate, the source digests, the
   trainer's image build (Cloud Build) and the package build, the fixed hyperparameters
   through ``dsl.OneOf``, training in that image on the smallest CPU machine of the catalog on
   demand, evaluation, registration as champion and deployment
   to an endpoint of this run's own name; with ``--email``, the same run nested under the
   failure notice (the second exit handler, Vertex's e-mail);
4. predict once at that endpoint;
5. undeploy, delete the endpoint, the model, the BigQuery dataset and the prefix (also after a
   failure), and print
   what the run cost (training at the price book's figure; serving as node-hours).

The images, the pipeline run's record and its jobs' records are kept (the images are reused by
the next run; records cost nothing).
"""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "EXAMPLE",
    "SAMPLE_INSTANCES",
    "SAMPLE_SCALE",
    "SERVING_MACHINE",
    "SmokeClients",
    "SmokePlan",
    "format_plan",
    "plan_smoke",
    "smallest_cpu_machine",
    "smoke_pipeline",
    "weekly_shape",
]

EXAMPLE = Path(__file__).resolve().parent.parent
"""The drink-shop example's folder."""
SAMPLE_SCALE = {"members": 400, "stores": 5, "weeks": 8, "seed": 7}
SERVING_MACHINE = "n1-standard-4"
"""What the weekly pipeline's deploy step serves on (deploy_model's default machine)."""
SAMPLE_INSTANCES = [{"member_id": 1, "store_id": 1, "timestamp": "2026-07-01T15:00:00"}]
BIGQUERY_BUDGET = 2**30
"""The smoke run's ``source.max_bytes``: its sample is a few MB, far below it."""


def example_pipelines() -> Any:
    """The example's ``pipelines.py`` (loaded by path, as the command line loads it)."""
    spec = importlib.util.spec_from_file_location("drink_shops_pipelines", EXAMPLE / "pipelines.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {EXAMPLE / 'pipelines.py'}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def smoke_pipeline(notification_emails: tuple[str, ...] = ()) -> Any:
    """The example's weekly pipeline; with recipients, under the failure notice (a nested
    run, a second exit handler and Vertex's e-mail task)."""
    from vertex_retrain.pipelines import configure

    weekly = example_pipelines().weekly
    if not notification_emails:
        return weekly
    return configure(weekly, name=weekly.name, notification_emails=list(notification_emails))


def warehouse_declaration(project: str, dataset: str) -> dict[str, Any]:
    """The example's warehouse declaration (``warehouse.py``), reading ``project.dataset``."""
    spec = importlib.util.spec_from_file_location("drink_shops_warehouse", EXAMPLE / "warehouse.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {EXAMPLE / 'warehouse.py'}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    declared = dict(module.WAREHOUSE_DECLARATION)
    declared["source"] = {
        "kind": "bigquery",
        "table": f"{project}.{dataset}.transactions",
        "max_bytes": BIGQUERY_BUDGET,
    }
    return declared


def weekly_shape(spec: dict[str, Any]) -> dict[str, bool]:
    """Which of the weekly pipeline's shapes a compiled spec holds (what the smoke run shows
    Vertex accepts): a nested pipeline, two exit handlers, ``dsl.OneOf``, the data gate,
    registration, deployment and the e-mail task."""
    components = spec.get("components", {})
    dags = [spec["root"], *components.values()]
    tasks = {
        name: task for dag in dags for name, task in dag.get("dag", {}).get("tasks", {}).items()
    }

    def is_exit(task: dict[str, Any]) -> bool:
        return task.get("triggerPolicy", {}).get("strategy") == "ALL_UPSTREAM_TASKS_COMPLETED"

    # A pipeline inside another: a component (not the root) with an exit task of its own.
    nested = [
        c
        for c in components.values()
        if any(map(is_exit, c.get("dag", {}).get("tasks", {}).values()))
    ]
    exit_tasks = [t for t in tasks.values() if is_exit(t)]
    oneof = [
        c
        for c in components.values()
        if "parameterSelectors" in str(c.get("dag", {}).get("outputs", {}))
    ]
    return {
        "nested pipeline": bool(nested),
        "two exit handlers": len(exit_tasks) >= 2,
        "dsl.OneOf": bool(oneof),
        "data gate": "check-data" in tasks,
        "register": "register-model" in tasks,
        "deploy": "deploy-model" in tasks,
        "e-mail": "vertex-pipelines-notification-email" in tasks,
    }


def smallest_cpu_machine(location: str) -> str:
    """The catalog's smallest CPU machine (fewest vCPUs, then least memory) with a recorded
    price in ``location`` (any region when none has one)."""
    from vertex_retrain.specs import load_catalog, load_prices

    catalog, prices = load_catalog(), load_prices()
    cpu = [
        m
        for m in catalog.machines.values()
        if m.vcpus
        and m.memory_gb
        and m.name not in catalog.bundled_gpus
        and m.family in ("n1", "n2", "e2", "c2")
    ]
    priced = [m for m in cpu if prices.machine(location, m.name).on_demand.amount is not None]
    chosen = min(priced or cpu, key=lambda m: (m.vcpus or 0, m.memory_gb or 0.0, m.name))
    return chosen.name


@dataclass(frozen=True)
class SmokePlan:
    """Everything the smoke run will create, run and delete, decided before anything happens.

    Attributes:
        project: Google Cloud project.
        location: Vertex AI region.
        bucket: Bucket (``gs://`` name) for the run's files and the pipeline root.
        run_id: This smoke run's id (names every resource it creates).
        prefix: ``gs://BUCKET/vertex-retrain-smoke/RUN``: every object the run writes.
        repository: Artifact Registry repository of the images.
        component_image: Given component image, or None (built).
        serving_image: Given serving image, or None (built).
        service_account: Runtime service account of the pipeline.
        machine_type: The training machine (smallest CPU machine).
        training_image: Where the pipeline builds the trainer's image (``trainer/Dockerfile``,
            with Cloud Build); its jobs run it by digest.
        model_display_name: The registry model this run creates.
        endpoint_display_name: The endpoint the pipeline deploys it to.
        notification_emails: Who Vertex e-mails when the run ends (empty: no notice).
        bigquery_dataset: The BigQuery dataset the run's data is loaded into and read from.
        parameters: The weekly pipeline's parameters (``as_of`` is set when the data
            exists).
        deletes: What the clean-up removes.
    """

    project: str
    location: str
    bucket: str
    run_id: str
    prefix: str
    repository: str
    component_image: str | None
    serving_image: str | None
    service_account: str
    machine_type: str
    training_image: str
    model_display_name: str
    endpoint_display_name: str
    notification_emails: tuple[str, ...] = ()
    parameters: dict[str, Any] = field(default_factory=dict)
    deletes: tuple[str, ...] = ()
    bigquery_dataset: str = ""

    @property
    def pipeline_root(self) -> str:
        """Where the pipeline run writes its artifacts (inside the prefix)."""
        return f"{self.prefix}/pipeline-root"


def plan_smoke(
    project: str,
    location: str,
    bucket: str,
    *,
    service_account: str,
    run_id: str,
    repository: str = "vertex-retrain",
    component_image: str | None = None,
    serving_image: str | None = None,
    notification_emails: tuple[str, ...] = (),
) -> SmokePlan:
    """Decides the smoke run without touching anything.

    Args:
        project: Google Cloud project.
        location: Vertex AI region.
        bucket: A bucket the credentials can write (``my-bucket`` or ``gs://my-bucket``).
        service_account: The pipeline's runtime service account.
        run_id: Names the run's resources (``[a-z0-9-]``).
        repository: Artifact Registry Docker repository for the images.
        component_image: An existing component image (skips its build).
        serving_image: An existing serving image (skips its build).
        notification_emails: Addresses Vertex e-mails when the run ends; given, the run is
            nested under the failure notice.

    Returns:
        The plan.
    """
    bucket_name = bucket.removeprefix("gs://").strip("/")
    prefix = f"gs://{bucket_name}/vertex-retrain-smoke/{run_id}"
    name = f"vertex-retrain-smoke-{run_id}"
    machine = smallest_cpu_machine(location)
    dataset = "vertex_retrain_smoke_" + run_id.replace("-", "_")
    image_host = f"{location}-docker.pkg.dev/{project}/{repository}"
    parameters = {
        "data_uri": f"{prefix}/transactions",
        "dataset_declaration": warehouse_declaration(project, dataset),
        "source_uri": f"{prefix}/source/trainer",
        "package_destination": f"{prefix}/packages",
        "output_root": f"{prefix}/runs",
        "model_display_name": name,
        "endpoint_display_name": name,
        # The fixed hyperparameters' branch of dsl.OneOf: a study would cost trials.
        "tune": False,
        "spot_fallback": False,
        # The jobs run the trainer's own image (the templates' default), built by the run.
        "image_destination": f"{image_host}/vertex-retrain-smoke-trainer",
        "machine_type": machine,
        "accelerator_type": "",
        "accelerator_count": 0,
        "scheduling_strategy": "STANDARD",
        "timeout_seconds": 3600,
        "training_args": ["--epochs", "1", "--batch_size", "512"],
        "service_account": service_account,
    }
    return SmokePlan(
        project=project,
        location=location,
        bucket=bucket_name,
        run_id=run_id,
        prefix=prefix,
        repository=repository,
        component_image=component_image,
        serving_image=serving_image,
        service_account=service_account,
        machine_type=machine,
        training_image=str(parameters["image_destination"]),
        model_display_name=name,
        endpoint_display_name=name,
        notification_emails=tuple(notification_emails),
        parameters=parameters,
        deletes=(
            f"endpoint {name} (after undeploying its model)",
            f"model {name} (every version)",
            f"BigQuery dataset {project}.{dataset} (its tables)",
            f"every object under {prefix}/",
        ),
        bigquery_dataset=dataset,
    )


def format_plan(plan: SmokePlan) -> str:
    """The plan as the lines ``make smoke-vertex`` prints before it starts."""
    image_host = f"{plan.location}-docker.pkg.dev/{plan.project}/{plan.repository}"
    lines = [
        f"smoke run {plan.run_id} in {plan.project}/{plan.location}:",
        f"  component image: {plan.component_image or f'build {image_host}/vertex-retrain'}",
        f"  serving image:   {plan.serving_image or f'build {image_host}/vertex-retrain-serve'}",
        f"  data and source: {plan.prefix}/ ({SAMPLE_SCALE['members']} members, "
        f"{SAMPLE_SCALE['weeks']} weeks)",
        f"  BigQuery: the sample loaded into {plan.project}.{plan.bigquery_dataset} "
        f"({plan.location}); extract-window queries it (at most {BIGQUERY_BUDGET:,} bytes)",
        f"  the weekly pipeline: data gate, build, fixed hyperparameters (dsl.OneOf), "
        f"the trainer's image (trainer/Dockerfile) built into {plan.training_image}, "
        f"training on {plan.machine_type} (CPU, on demand) in it, evaluation, registration",
        f"  it deploys {plan.model_display_name} to endpoint {plan.endpoint_display_name} "
        f"(1 x {SERVING_MACHINE}); predict once",
        (
            f"  e-mail to {', '.join(plan.notification_emails)}: the run nested under the "
            "failure notice (two exit handlers)"
            if plan.notification_emails
            else "  no e-mail (--email ADDRESS nests the run under the failure notice)"
        ),
        "  then delete: " + "; ".join(plan.deletes),
    ]
    return "\n".join(lines) + "\n"


@dataclass
class SmokeClients:
    """The services the smoke run calls (the real ones by :func:`default_clients`)."""

    storage: Any
    build: Any
    models: Any
    endpoints: Any
    predictions: Any
    run_pipeline: Callable[[dict[str, Any], SmokePlan, dict[str, Any]], str]
    """``(compiled spec, plan, parameters) -> final state``: submits and waits."""
    prepare_inputs: Callable[[SmokePlan, Any], dict[str, Any]]
    """``(plan, storage) -> parameters``: uploads data and wheel, returns their parameters."""
    clock: Callable[[], float] = time.monotonic
    bigquery: Any = None
    """A ``google.cloud.bigquery.Client``: loads the sample into the plan's dataset, and
    deletes that dataset in the clean-up."""
