"""Carrying out a smoke plan (:mod:`vertex_smoke.plan`) through injected clients.

Every step prints one line. Whatever happens after the first resource exists, the clean-up
runs: the endpoint is emptied and deleted, the model deleted, the run's objects removed; and the
cost is printed from what was measured.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from vertex_smoke.plan import (
    SAMPLE_INSTANCES,
    SAMPLE_SCALE,
    SERVING_MACHINE,
    SmokeClients,
    SmokePlan,
)

__all__ = ["SmokeOutcome", "apply_smoke", "default_clients"]


@dataclass
class SmokeOutcome:
    """What the run did and measured (filled in as it goes, so a failure keeps it)."""

    pipeline_state: str = ""
    training_seconds: float = 0.0
    serving_seconds: float = 0.0
    model_name: str = ""
    endpoint_name: str = ""
    prediction: Any = None
    deleted: list[str] = field(default_factory=list)


def _find_version(plan: SmokePlan, clients: SmokeClients) -> str:
    from vertex_retrain.backends.vertex.model_registry import find_model_version

    found = find_model_version(
        project=plan.project,
        location=plan.location,
        display_name=plan.model_display_name,
        alias="default",
        model_client=clients.models,
    )
    if found is None:
        raise RuntimeError(f"the pipeline registered no model {plan.model_display_name}")
    return f"{str(found['name']).split('@')[0]}@{found['versionId']}"


def _predict(plan: SmokePlan, clients: SmokeClients, outcome: SmokeOutcome, out: TextIO) -> None:
    """Predicts once at the endpoint the pipeline deployed to."""
    from google.cloud import aiplatform_v1

    from vertex_retrain.backends.vertex._protos import location_parent
    from vertex_retrain.backends.vertex.endpoints import find_endpoint

    parent = location_parent(plan.project, plan.location)
    endpoint = find_endpoint(clients.endpoints, parent, plan.endpoint_display_name)
    if endpoint is None or not endpoint.deployed_models:
        raise RuntimeError(f"the pipeline deployed nothing to {plan.endpoint_display_name}")
    outcome.endpoint_name = endpoint.name
    request = aiplatform_v1.PredictRequest(endpoint=endpoint.name)
    request.instances.extend(SAMPLE_INSTANCES)
    response = clients.predictions.predict(request=request)
    outcome.prediction = [dict(p) if hasattr(p, "items") else p for p in response.predictions]
    print(f"predicted at {endpoint.name}: {outcome.prediction}", file=out)


# Arrow type (as the dataset declaration writes it) -> BigQuery column type. Naive timestamps
# are DATETIME: the declaration's times are local times, and BigQuery's TIMESTAMP is UTC.
_BIGQUERY_TYPES = (
    ("int", "INTEGER"),
    ("uint", "INTEGER"),
    ("float", "FLOAT"),
    ("double", "FLOAT"),
    ("bool", "BOOLEAN"),
    ("string", "STRING"),
    ("date32", "DATE"),
    ("timestamp", "DATETIME"),
)


def bigquery_schema(columns: dict[str, str]) -> list[Any]:
    """The declared columns as BigQuery ``SchemaField``s (what the load jobs create)."""
    from google.cloud import bigquery

    def kind(arrow: str) -> str:
        return next(bq for prefix, bq in _BIGQUERY_TYPES if arrow.startswith(prefix))

    return [bigquery.SchemaField(name, kind(arrow)) for name, arrow in columns.items()]


def load_bigquery(plan: SmokePlan, client: Any, out: TextIO) -> None:
    """Creates the plan's dataset in its region and loads the uploaded sample into it."""
    from google.cloud import bigquery

    declaration = plan.parameters["dataset_declaration"]
    dataset = bigquery.Dataset(f"{plan.project}.{plan.bigquery_dataset}")
    dataset.location = plan.location
    client.create_dataset(dataset, exists_ok=True)
    data_uri = plan.parameters["data_uri"]
    tables = {"transactions": (f"{data_uri}/transactions/*.parquet", declaration["table"])}
    for name, dimension in declaration.get("dimensions", {}).items():
        tables[name] = (f"{data_uri}/{dimension['file']}", dimension)
    for name, (uri, declared) in tables.items():
        config = bigquery.LoadJobConfig(
            source_format=bigquery.SourceFormat.PARQUET,
            schema=bigquery_schema(declared["columns"]),
            write_disposition=bigquery.WriteDisposition.WRITE_TRUNCATE,
        )
        target = f"{plan.project}.{plan.bigquery_dataset}.{name}"
        client.load_table_from_uri(uri, target, job_config=config).result(timeout=600)
    print(f"loaded {', '.join(tables)} into {plan.project}.{plan.bigquery_dataset}", file=out)


def _clean_up(plan: SmokePlan, clients: SmokeClients, outcome: SmokeOutcome, out: TextIO) -> None:
    """Deletes what the run created; each part is tried even when another fails."""
    from google.cloud import aiplatform_v1

    from vertex_retrain.backends.vertex._protos import location_parent
    from vertex_retrain.backends.vertex.endpoint_state import set_traffic
    from vertex_retrain.backends.vertex.endpoints import find_endpoint

    parent = location_parent(plan.project, plan.location)
    failures = []
    try:
        endpoint = find_endpoint(clients.endpoints, parent, plan.endpoint_display_name)
        if endpoint is not None:
            # No traffic first: a deployed model with traffic cannot be undeployed.
            set_traffic(clients.endpoints, endpoint.name, {})
            for deployed in endpoint.deployed_models:
                clients.endpoints.undeploy_model(
                    request=aiplatform_v1.UndeployModelRequest(
                        endpoint=endpoint.name, deployed_model_id=deployed.id, traffic_split={}
                    )
                ).result(timeout=1800)
            clients.endpoints.delete_endpoint(name=endpoint.name).result(timeout=600)
            outcome.deleted.append(f"endpoint {endpoint.name}")
    except Exception as error:  # keep cleaning; report at the end
        failures.append(f"endpoint: {error}")
    try:
        models = clients.models.list_models(
            request={"parent": parent, "filter": f'display_name="{plan.model_display_name}"'}
        )
        for name in sorted({m.name.split("@")[0] for m in models}):
            clients.models.delete_model(name=name).result(timeout=600)
            outcome.deleted.append(f"model {name}")
    except Exception as error:
        failures.append(f"model: {error}")
    if plan.bigquery_dataset and clients.bigquery is not None:
        try:
            name = f"{plan.project}.{plan.bigquery_dataset}"
            clients.bigquery.delete_dataset(name, delete_contents=True, not_found_ok=True)
            outcome.deleted.append(f"BigQuery dataset {name}")
        except Exception as error:
            failures.append(f"BigQuery dataset: {error}")
    try:
        prefix = plan.prefix.removeprefix(f"gs://{plan.bucket}/") + "/"
        blobs = list(clients.storage.list_blobs(plan.bucket, prefix=prefix))
        for blob in blobs:
            blob.delete()
        outcome.deleted.append(f"{len(blobs)} object(s) under {plan.prefix}/")
    except Exception as error:
        failures.append(f"objects: {error}")
    for line in outcome.deleted:
        print(f"deleted {line}", file=out)
    if failures:
        print("clean-up left something behind: " + "; ".join(failures), file=sys.stderr)


def cost_lines(plan: SmokePlan, outcome: SmokeOutcome) -> list[str]:
    """What the run cost: training at the price book's figure, serving as node-hours."""
    from vertex_retrain.specs import load_prices
    from vertex_retrain.specs.cost import format_money

    prices = load_prices()
    figure = prices.machine(plan.location, plan.machine_type).on_demand
    hours = outcome.training_seconds / 3600
    if figure.amount is None:
        training = f"{hours:.2f} h of {plan.machine_type} (no price recorded for {plan.location})"
    else:
        amount = format_money(figure.amount * hours, prices.currency)
        training = (
            f"at most {amount}: {hours:.2f} h (the whole pipeline run) of {plan.machine_type} "
            f"at {figure.amount:.4f}/h ({figure.citation()})"
        )
    serving_hours = outcome.serving_seconds / 3600
    return [
        f"cost, training: {training}",
        f"cost, serving: {serving_hours:.2f} node-hour(s) of {SERVING_MACHINE} (prediction "
        "prices are not in the price book)",
        "cost, BigQuery: the run summary's Warehouse line (bytes billed, at most "
        f"{plan.parameters.get('dataset_declaration', {}).get('source', {}).get('max_bytes', 0):,}"
        " by source.max_bytes)",
        "not included: the pipeline's own steps, Cloud Build minutes, storage and network",
    ]


def apply_smoke(
    plan: SmokePlan, clients: SmokeClients, spec: dict[str, Any], out: TextIO
) -> SmokeOutcome:
    """Runs the plan; cleans up and prints the cost whatever happens.

    Args:
        plan: From :func:`vertex_smoke.plan.plan_smoke`.
        clients: The services.
        spec: The weekly pipeline compiled with the component image.
        out: Where the progress lines go.

    Returns:
        What was done and measured.

    Raises:
        RuntimeError: A step failed (after the clean-up).
    """
    outcome = SmokeOutcome()
    try:
        parameters = {**plan.parameters, **clients.prepare_inputs(plan, clients.storage)}
        if plan.bigquery_dataset:
            load_bigquery(plan, clients.bigquery, out)
        started = clients.clock()
        outcome.pipeline_state = clients.run_pipeline(spec, plan, parameters)
        outcome.training_seconds = clients.clock() - started
        print(f"the weekly pipeline ended {outcome.pipeline_state}", file=out)
        if outcome.pipeline_state != "PIPELINE_STATE_SUCCEEDED":
            raise RuntimeError(f"the pipeline run ended {outcome.pipeline_state}")
        outcome.model_name = _find_version(plan, clients)
        serving = clients.clock()
        try:
            _predict(plan, clients, outcome, out)
        finally:
            # The endpoint served from its deploy step (inside the run) until the clean-up.
            outcome.serving_seconds = clients.clock() - serving
    finally:
        _clean_up(plan, clients, outcome, out)
        for line in cost_lines(plan, outcome):
            print(line, file=out)
    return outcome


def upload_folder(storage: Any, folder: Path, uri: str, skip: tuple[str, ...] = ()) -> int:
    """Uploads a local folder's files under ``gs://BUCKET/PATH`` (leaving out any path with a
    part ending in one of ``skip``); returns how many."""
    bucket, _, prefix = uri.removeprefix("gs://").partition("/")
    count = 0
    files = [p for p in folder.rglob("*") if p.is_file()]
    for path in sorted(p for p in files if not any(part.endswith(skip) for part in p.parts)):
        storage.bucket(bucket).blob(
            f"{prefix}/{path.relative_to(folder).as_posix()}"
        ).upload_from_filename(str(path))
        count += 1
    return count


def prepare_inputs(plan: SmokePlan, storage: Any) -> dict[str, Any]:
    """Generates and uploads the sample data, and uploads the trainer's source (the pipeline
    builds its package).

    Returns:
        ``as_of``: the day after the generated data ends.
    """
    import json

    from vertex_smoke.plan import EXAMPLE

    with tempfile.TemporaryDirectory(prefix="vertex-retrain-smoke-") as scratch:
        data = Path(scratch) / "transactions"
        flags = [f"--{name}={value}" for name, value in SAMPLE_SCALE.items()]
        subprocess.run(
            [sys.executable, "-m", "trainer.data", "generate", *flags, f"--out={data}"],
            check=True,
            capture_output=True,
        )
        summary = json.loads((data / "generation.json").read_text())
        upload_folder(storage, data, plan.parameters["data_uri"])
    source = EXAMPLE / "trainer"
    upload_folder(storage, source, plan.parameters["source_uri"], skip=("__pycache__", ".egg-info"))
    start = dt.date.fromisoformat(str(summary["start_date"]))
    as_of = start + dt.timedelta(weeks=int(SAMPLE_SCALE["weeks"]))
    return {"as_of": as_of.isoformat()}


def default_clients(plan: SmokePlan) -> SmokeClients:
    """The real clients, with application default credentials."""
    import google.cloud.storage
    from google.cloud import bigquery

    from vertex_retrain.backends.vertex.endpoints import default_endpoint_client
    from vertex_retrain.backends.vertex.model_registry import default_model_client
    from vertex_retrain.backends.vertex.sample_prediction import default_prediction_client

    def run_pipeline(spec: dict[str, Any], plan: SmokePlan, parameters: dict[str, Any]) -> str:
        from vertex_retrain.cli.vertex_submit import submit_spec

        job, _ = submit_spec(
            spec,
            str(spec["pipelineInfo"]["name"]),
            service_account=plan.service_account,
            project=plan.project,
            location=plan.location,
            pipeline_root=plan.pipeline_root,
            parameter_values={"backend": "vertex", **parameters},
            display_name=f"vertex-retrain-smoke-{plan.run_id}",
            enable_caching=False,
        )
        with contextlib.suppress(RuntimeError):  # the state says how it ended
            job.wait()
        return str(getattr(job.state, "name", job.state))

    return SmokeClients(
        storage=google.cloud.storage.Client(project=plan.project),
        build=None,
        models=default_model_client(plan.location),
        endpoints=default_endpoint_client(plan.location),
        predictions=default_prediction_client(plan.location),
        run_pipeline=run_pipeline,
        prepare_inputs=prepare_inputs,
        bigquery=bigquery.Client(project=plan.project, location=plan.location),
    )
