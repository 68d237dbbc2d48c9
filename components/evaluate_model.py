"""evaluate_model: score the candidate and the current champion on the same held-out data."""

from typing import NamedTuple

from kfp.dsl import Dataset, Input, Metrics, Model, Output, OutputPath

from vertex_retrain.components.exec_launch import lightweight_component
from vertex_retrain.components.signature_defaults import defaults_from
from vertex_retrain.specs.defaults import EVALUATION, RUN_PLACEHOLDERS


# `...`: the default vertex_retrain.specs.defaults defines (components/signature_defaults.py).
@lightweight_component
@defaults_from(EVALUATION, RUN_PLACEHOLDERS)
def evaluate_model(
    backend: str,
    candidate: Input[Model],
    dataset: Input[Dataset],
    model_display_name: str,
    base_output_directory: str,
    evaluation_declaration: dict,
    python_module: str,
    metrics: Output[Metrics],
    gcp_resources: OutputPath(str),
    champion_alias: str = "champion",
    force_decision: str = "",
    force_reason: str = "",
    package_uri: str = "",
    package_uris: list = [],  # noqa: B006 - KFP reads defaults from the signature
    executor_image_uri: str = ...,
    image_uri: str = "",
    args: list = [],  # noqa: B006
    machine_type: str = ...,
    timeout_seconds: int = ...,
    service_account: str = ...,
    project: str = ...,
    location: str = ...,
) -> NamedTuple(
    "Outputs",
    [
        ("is_better", bool),
        ("candidate_score", float),
        ("champion_score", float),
        ("reason", str),
        ("rule", dict),
        ("evidence", dict),
    ],
):
    """Decides whether the candidate should replace the champion.

    The scoring is the training package's own code: its evaluation entry point
    (``python -m PYTHON_MODULE``) runs as a CustomJob on one CPU machine with the evaluation
    contract's flags (``--candidate-model-dir``, ``--champion-model-dir``, ``--data``,
    ``--metrics-output``) and writes a metrics JSON file (see
    docs/components.md#evaluation-contract). The rule is the evaluation declaration
    (docs/components.md#evaluation-declaration): the candidate wins when it reaches every
    floor, beats the declared reference (the strongest of those declared) on the primary
    metric, and improves the primary metric over the champion's by more than
    ``min_improvement`` (in the metric's direction) with no guardrail metric worse by more
    than allowed. With no champion yet, floors and reference alone decide; with neither
    declared, no first champion is made. A champion whose recorded data window (its version's
    ``data_from``/``data_gate_from`` labels) overlaps the dataset's gate period is not scored
    (a replay would judge it on data it trained on): floors and reference decide, and the
    ``evidence`` output says so. A candidate that is the champion's own model folder (a
    re-run of the week that made it, its training from the cache) is scored alone and not
    promoted: the reason says there is nothing to decide, and ``champion_comparison`` is
    ``same model: version <id>``. When the entry point writes a per-entity scores file, the
    paired bootstrap intervals of candidate minus champion and minus reference are computed
    (and decide, with the declaration's ``confidence.require``).

    Args:
        backend: ``"vertex"`` or ``"local"``: where the job runs and the champion is found.
        candidate: The candidate model directory.
        dataset: The dataset from ``prepare_dataset``.
        model_display_name: Registry model that holds the champion.
        base_output_directory: ``gs://`` folder; the job writes ``metrics.json`` under
            ``<it>/<key>/evaluate``, the key a digest of this task's inputs.
        evaluation_declaration: Metrics and their directions, the primary metric,
            ``min_improvement``, guardrails, floors and an optional reference
            (docs/components.md#evaluation-declaration).
        python_module: The evaluation entry point of the training package
            (``mypackage.evaluate``); ignored with ``image_uri``.
        metrics: Output: candidate, champion and reference metrics.
        gcp_resources: Output: the evaluation job's resource (console link, cancellation).
        champion_alias: Alias of the current champion version.
        force_decision: ``"better"`` or ``"worse"`` overrides the rule (rehearsals, tests);
            the metrics are still computed and reported.
        force_reason: Why the rule is overridden; required with ``force_decision`` and kept
            in the decision, the run summary and the history.
        package_uri: ``gs://`` URI of the training package (the one the training ran).
        package_uris: More package URIs (used after ``package_uri``, each once).
        executor_image_uri: Prebuilt image that runs the package.
        image_uri: Custom container instead of a package: its entrypoint gets ``args`` and
            then the contract's flags.
        args: Extra arguments for the entry point, before the contract's flags.
        machine_type: Machine of the evaluation job (no accelerator; on demand).
        timeout_seconds: Maximum run time of the evaluation job.
        service_account: Service account the job runs as; by default the pipeline's own
            (GCPC's pipeline service account placeholder, which Vertex resolves).
        project: Google Cloud project.
        location: Google Cloud region.

    Returns:
        is_better: Whether the candidate should become the champion.
        candidate_score: The candidate's primary metric.
        champion_score: The champion's primary metric (-1 when there is no champion).
        reason: One sentence explaining the decision.
        rule: The evaluation declaration as applied (``primary``, ``metrics`` with their
            directions, ``reference``...), for the run summary and the history.
        evidence: What the decision rested on besides the metrics: ``reference`` (the one
            the candidate had to beat), ``champion_comparison`` (``compared``, ``no
            champion``, ``not comparable: ...`` or ``same model: version <id>``),
            ``intervals`` (candidate minus
            ``champion`` / ``reference:<name>``: point, low, high, level) and ``override``
            (the forced decision and its reason).
    """
    inputs = dict(locals())  # every input, by name
    from dataclasses import replace

    from vertex_retrain.steps.evaluate import evaluate, evaluation_request
    from vertex_retrain.steps.job_request import keyed_output

    request = evaluation_request(inputs)
    directory, key = keyed_output("evaluate", base_output_directory, request)
    decision = evaluate(
        replace(request, output_directory=directory),
        gcp_resources_path=gcp_resources,
        request_key=key,
    )
    for name, value in decision.reported_metrics().items():
        metrics.log_metric(name, value)
    return (
        decision.is_better,
        decision.candidate_score,
        decision.champion_score,
        decision.reason,
        decision.rule,
        decision.evidence(),
    )
