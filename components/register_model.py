"""register_model: a new Model Registry version, with champion/challenger aliases."""

from typing import NamedTuple

from google_cloud_pipeline_components.types.artifact_types import VertexModel
from kfp.dsl import Input, Metrics, Model, Output, OutputPath

from vertex_retrain.components.exec_launch import lightweight_component
from vertex_retrain.components.signature_defaults import defaults_from
from vertex_retrain.specs.defaults import RUN_PLACEHOLDERS


# `...`: the default vertex_retrain.specs.defaults defines (components/signature_defaults.py).
@lightweight_component
@defaults_from(RUN_PLACEHOLDERS)
def register_model(
    backend: str,
    model: Input[Model],
    display_name: str,
    serving_image_uri: str,
    vertex_model: Output[VertexModel],
    gcp_resources: OutputPath(str),
    make_champion: bool = False,
    champion_alias: str = "champion",
    challenger_alias: str = "challenger",
    serving_command: list = [],  # noqa: B006 - KFP reads defaults from the signature
    serving_args: list = [],  # noqa: B006
    serving_package_uri: str = "",
    serving_extras: list = [],  # noqa: B006
    health_route: str = "/health",
    predict_route: str = "/predict",
    labels: dict = {},  # noqa: B006
    sample_instances: list = [],  # noqa: B006
    evaluation: Input[Metrics] = None,
    dataset_uri: str = "",
    pipeline_run: str = "",
    project: str = ...,
    location: str = ...,
    training_labels: dict = {},  # noqa: B006
) -> NamedTuple("Outputs", [("version_id", str), ("aliases", list)]):
    """Uploads the model as a new version of ``display_name`` and sets its aliases.

    A model folder that is missing or empty is refused before anything is registered.

    The model is created on first use; later runs add versions to it (``parent_model``).
    ``champion`` and the default version move only when ``make_champion`` is true (the
    evaluation gate passed), in one step; otherwise the version gets ``challenger``. A
    re-run of the same pipeline task returns the version it made instead of adding one. On
    Vertex the upload operation is written to ``gcp_resources`` (the console links it, as for
    GCPC's ModelUploadOp), and a restarted task waits for that operation instead of
    uploading again.

    Args:
        backend: ``"vertex"`` or ``"local"``.
        model: The model directory to register.
        display_name: The registry model's display name.
        serving_image_uri: Prediction container image.
        vertex_model: Output: the version, as GCPC's ``google.VertexModel`` artifact; its
            metadata also carries ``sampleInstances`` for ``deploy_model``.
        gcp_resources: Output: the upload operation (Vertex), in GCPC's format.
        make_champion: Move the champion alias and the default version to this version.
        champion_alias: Alias of the version that serves.
        challenger_alias: Alias given to versions that did not pass the gate.
        serving_command: Container command (empty: the image's entrypoint).
        serving_args: Container arguments.
        serving_package_uri: The wheel or sdist holding the serving code (e.g. the training
            package, built by ``build_container``). The local backend runs
            ``serving_command`` (``python -m MODULE``) in an environment built from it and its
            requirements, as it runs a training package; a version with neither this nor an
            image built by the local builder cannot be deployed locally. On Vertex the image
            holds the code and this is recorded as lineage (in the version's description).
        serving_extras: Extras of that package the serving code needs (e.g. ``["serve"]``).
        health_route: Health route of the prediction server.
        predict_route: Predict route of the prediction server.
        labels: Labels on the version.
        sample_instances: Instances a deployment of this version must answer before it
            receives traffic (the local backend's smoke test).
        evaluation: Evaluation metrics to record with the version.
        dataset_uri: Training data, recorded as lineage.
        pipeline_run: Pipeline run that produced the version (lineage and idempotency).
        project: Google Cloud project.
        location: Google Cloud region.
        training_labels: More labels on the version, over ``labels`` (``plan_training``'s:
            how the version was trained, and the week of its line's last full retrain).

    Returns:
        version_id: The new (or existing, on a re-run) version id.
        aliases: The version's aliases after the call.
    """
    from vertex_retrain.steps.register import RegistrationRequest, register

    evaluation_metrics = dict(evaluation.metadata) if evaluation is not None else {}
    registered = register(
        RegistrationRequest(
            backend=backend,
            artifact_uri=model.uri,
            display_name=display_name,
            serving_image_uri=serving_image_uri,
            make_champion=make_champion,
            champion_alias=champion_alias,
            challenger_alias=challenger_alias,
            serving_command=[str(part) for part in serving_command],
            serving_args=[str(part) for part in serving_args],
            serving_package_uri=serving_package_uri,
            serving_extras=[str(extra) for extra in serving_extras],
            health_route=health_route,
            predict_route=predict_route,
            labels={str(k): str(v) for k, v in {**labels, **training_labels}.items()},
            evaluation_metrics=evaluation_metrics,
            sample_instances=list(sample_instances),
            dataset_uri=dataset_uri,
            pipeline_run=pipeline_run,
            project=project,
            location=location,
            gcp_resources_path=gcp_resources,
        )
    )
    vertex_model.uri = registered.artifact_uri
    vertex_model.metadata["resourceName"] = registered.resource_name
    vertex_model.metadata["versionId"] = registered.version_id
    # deploy_model names a new endpoint after the model when it is given no name.
    vertex_model.metadata["displayName"] = display_name
    # The Vertex registry keeps no instances; the deployment's sample check reads them here.
    vertex_model.metadata["sampleInstances"] = list(sample_instances)
    return (registered.version_id, registered.aliases)
