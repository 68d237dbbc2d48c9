"""evaluate_model's step: the package's evaluation job runs on the local backend, then decides.

The jobs run ``tests/data/components/tiny_evaluator`` for real (a wheel in a package
environment, a process per replica), so what is tested is the evaluation contract end to end:
the flags the job gets, the metrics file it writes and how the step reads it back.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from vertex_retrain.backends.local.environments.builder import build_python_package
from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
from vertex_retrain.backends.local.storage import to_local_path
from vertex_retrain.components.evaluate_model import evaluate_model
from vertex_retrain.contracts.evaluation import CHAMPION_FLAG
from vertex_retrain.specs.defaults import EVALUATION, EvaluationDefaults
from vertex_retrain.steps.evaluate import (
    EvaluationJobFailedError,
    EvaluationRequest,
    evaluate,
    evaluation_job_request,
    metrics_uri,
)
from vertex_retrain.steps.job_request import custom_job_payload

FIXTURE = Path(__file__).resolve().parent / "data" / "components" / "tiny_evaluator"
SERVING = {"imageUri": "us-docker.pkg.dev/p/r/serve:1", "predictRoute": "/predict"}
RULE = {"primary": "score", "metrics": {"score": "higher"}}
# The package path's evaluation on an executor image that is served: the shipped catalog's
# have all ended (that refusal is tested in test_specs_executor_images and test_cli_preflight).
pytestmark = pytest.mark.usefixtures("catalog_still_serving")


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A local storage root for the module and the evaluator's wheel in it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path_factory.mktemp("evaluate") / "root"))
        yield build_python_package(FIXTURE, destination_uri="gs://b/packages", version="1.0").uri


def _model(uri: str, x: float) -> str:
    folder = to_local_path(uri)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.json").write_text(json.dumps({"x": x}))
    return uri


def _request(package: str, name: str, **changes: Any) -> EvaluationRequest:
    fields: dict[str, Any] = {
        "backend": "local",
        "candidate_uri": _model(f"gs://b/models/{name}/candidate", 0.5),
        "dataset_uri": "gs://b/datasets/d1",
        "model_display_name": name,
        "output_directory": f"gs://b/evaluations/{name}",
        "evaluation_declaration": RULE,
        "python_module": "tiny_evaluator.evaluate",
        "package_uris": [package],
        "machine_type": "n1-standard-4",
        **changes,
    }
    return EvaluationRequest(**fields)


def _run(request: EvaluationRequest, tmp_path: Path) -> Any:
    return evaluate(request, gcp_resources_path=str(tmp_path / "gcp_resources"))


def test_evaluate_local_job_without_champion_makes_the_candidate_the_first(
    package: str, tmp_path: Path
) -> None:
    request = _request(package, "first", evaluation_declaration={**RULE, "reference": "constant"})
    decision = _run(request, tmp_path)
    assert decision.is_better and decision.champion_score == -1.0
    assert decision.champion_comparison == "no champion" and decision.intervals == {}
    assert decision.candidate_score == 0.5
    assert decision.reference_metrics == {"constant": {"score": 0.1}}
    written = json.loads(to_local_path(metrics_uri(request.output_directory)).read_text())
    assert written["champion"] is None and written["data"] == "gs://b/datasets/d1"
    (resource,) = json.loads((tmp_path / "gcp_resources").read_text())["resources"]
    assert resource["resourceType"] == "CustomJob"


def test_evaluate_local_job_scores_the_champion_and_keeps_it_when_better(
    package: str, tmp_path: Path
) -> None:
    champion = _model("gs://b/models/held/champion", 0.7)
    ModelRegistry().upload_version(
        "held", artifact_uri=champion, container_spec=SERVING, aliases=["champion"]
    )
    decision = _run(_request(package, "held"), tmp_path)
    assert decision.is_better is False
    assert (decision.candidate_score, decision.champion_score) == (0.5, 0.7)
    assert "score (higher is better) did not improve (-0.2000)" in decision.reason
    assert decision.reported_metrics()["champion_score"] == 0.7


def test_evaluate_local_job_reads_the_declared_direction(package: str, tmp_path: Path) -> None:
    champion = _model("gs://b/models/errors/champion", 0.7)
    ModelRegistry().upload_version(
        "errors", artifact_uri=champion, container_spec=SERVING, aliases=["champion"]
    )
    lower = {"primary": "score", "metrics": {"score": "lower"}}
    decision = _run(_request(package, "errors", evaluation_declaration=lower), tmp_path)
    assert decision.is_better is True  # 0.5 against 0.7, and lower is better
    assert "score (lower is better) improved by +0.2000" in decision.reason


def test_evaluate_local_job_refuses_a_first_candidate_beyond_a_floor(
    package: str, tmp_path: Path
) -> None:
    rule = {**RULE, "floors": {"score": 0.6}}
    decision = _run(_request(package, "floor", evaluation_declaration=rule), tmp_path)
    assert decision.is_better is False and decision.champion_score == -1.0
    assert "score is 0.5000, beyond the required minimum 0.6000" in decision.reason


def test_evaluate_local_job_first_candidate_needs_something_to_beat(
    package: str, tmp_path: Path
) -> None:
    decision = _run(_request(package, "no-bar"), tmp_path)
    assert decision.is_better is False and "nothing to beat" in decision.reason


def test_evaluate_refuses_a_forced_decision_without_a_reason_before_any_job(
    package: str, tmp_path: Path
) -> None:
    request = _request(package, "forced", force_decision="better")
    with pytest.raises(ValueError, match="give force_reason"):
        _run(request, tmp_path)
    assert not (tmp_path / "gcp_resources").exists()
    forced = _run(replace(request, force_reason="a drill"), tmp_path)
    assert forced.is_better and forced.override["reason"] == "a drill"


def test_evaluate_local_replay_does_not_score_a_champion_on_its_own_training_window(
    package: str, tmp_path: Path
) -> None:
    champion = _model("gs://b/models/replay/champion", 0.9)
    ModelRegistry().upload_version(
        "replay",
        artifact_uri=champion,
        container_spec=SERVING,
        aliases=["champion"],
        labels={"data_from": "2026-01-05", "data_gate_from": "2026-03-02"},
    )
    manifest = {"period": "week", "gate": {"periods": ["2026-02-16"], "files": [], "rows": 1}}
    replayed = to_local_path("gs://b/datasets/replay/manifest.json")
    replayed.parent.mkdir(parents=True, exist_ok=True)
    replayed.write_text(json.dumps(manifest))
    rule = {**RULE, "reference": "constant"}
    request = _request(
        package, "replay", dataset_uri="gs://b/datasets/replay", evaluation_declaration=rule
    )
    decision = _run(request, tmp_path)
    # The champion (0.9) would win on its own training data; it is not even scored.
    written = json.loads(to_local_path(metrics_uri(request.output_directory)).read_text())
    assert written["champion"] is None and decision.champion_score == -1.0
    assert decision.champion_comparison.startswith("not comparable: the gate period")
    assert decision.is_better and "beat reference 'constant'" in decision.reason
    # The week after the champion's window is judged against it as usual.
    manifest["gate"]["periods"] = ["2026-03-02"]
    replayed.write_text(json.dumps(manifest))
    later = _run(replace(request, output_directory="gs://b/evaluations/later"), tmp_path)
    assert later.champion_comparison == "compared" and later.champion_score == 0.9
    assert later.is_better is False


def test_evaluate_local_candidate_that_is_the_champion_has_nothing_to_decide(
    package: str, tmp_path: Path
) -> None:
    request = _request(package, "itself", evaluation_declaration={**RULE, "reference": "constant"})
    # A re-run of the champion's week: its training came from the cache, so the candidate is
    # the champion's own folder (the registry wrote it with a trailing slash).
    version = ModelRegistry().upload_version(
        "itself",
        artifact_uri=request.candidate_uri + "/",
        container_spec=SERVING,
        aliases=["champion"],
    )
    decision = _run(replace(request, force_decision="worse", force_reason="drill"), tmp_path)
    assert decision.is_better is False and not decision.override
    assert decision.reason.startswith(
        f"the candidate is the current champion (version {version.version_id}): nothing to "
        "decide; it keeps its aliases and its traffic (force_decision='worse' has no outcome"
    )
    assert decision.champion_comparison == f"same model: version {version.version_id}"
    assert decision.candidate_score == decision.champion_score == 0.5
    assert decision.reference == "constant" and decision.reference_metrics["constant"]
    # Scored once, as the candidate: the job was given no champion.
    written = json.loads(to_local_path(metrics_uri(request.output_directory)).read_text())
    assert written["champion"] is None


def test_evaluate_local_job_first_candidate_must_beat_the_declared_reference(
    package: str, tmp_path: Path
) -> None:
    rule = {**RULE, "reference": "constant"}
    request = _request(package, "weak", evaluation_declaration=rule)
    weak = replace(request, candidate_uri=_model("gs://b/models/weak/below", 0.05))
    decision = _run(weak, tmp_path)
    assert decision.is_better is False
    assert "does not beat reference 'constant' (0.1000)" in decision.reason


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"python_module": ""}, "needs the package's evaluation entry point"),
        ({"evaluation_declaration": {"primary": "score"}}, "metrics is None"),
    ],
)
def test_evaluate_refuses_a_request_it_cannot_decide_before_any_job(
    package: str, tmp_path: Path, changes: dict[str, Any], message: str
) -> None:
    request = _request(package, "unsubmitted", **changes)
    with pytest.raises(ValueError, match=message):
        _run(request, tmp_path)
    assert not (tmp_path / "gcp_resources").exists()
    assert not to_local_path(metrics_uri(request.output_directory)).exists()


def test_evaluate_local_job_non_finite_metric_fails_naming_the_field(
    package: str, tmp_path: Path
) -> None:
    with pytest.raises(EvaluationJobFailedError, match=r"field candidate\.score is nan"):
        _run(_request(package, "nan", args=["--break=nan"]), tmp_path)


def test_evaluate_local_job_without_metrics_file_fails_with_the_contract(
    package: str, tmp_path: Path
) -> None:
    with pytest.raises(EvaluationJobFailedError, match="wrote no metrics file at gs://"):
        _run(_request(package, "silent", args=["--break=silent"]), tmp_path)


def test_evaluate_local_job_failure_names_the_entry_point_and_the_log(
    package: str, tmp_path: Path
) -> None:
    with pytest.raises(EvaluationJobFailedError) as failure:
        _run(_request(package, "exit", args=["--break=exit"]), tmp_path)
    message = str(failure.value)
    assert "python -m tiny_evaluator.evaluate" in message
    assert "failing on purpose" in message and "exit code 3" in message


def test_evaluation_job_request_is_one_cpu_replica_on_demand_with_the_contract_flags() -> None:
    request = EvaluationRequest(
        backend="vertex",
        candidate_uri="gs://b/c",
        dataset_uri="gs://b/d",
        model_display_name="m",
        output_directory="gs://b/e/",
        evaluation_declaration=RULE,
        python_module="mine.evaluate",
        package_uris=["gs://b/p/trainer-1.0-py3-none-any.whl"],
        args=["--num-threads", "4"],
    )
    payload = custom_job_payload(evaluation_job_request(request, "gs://b/champ"))
    (pool,) = payload["jobSpec"]["workerPoolSpecs"]
    assert pool["machineSpec"] == {"machineType": EVALUATION.machine_type}
    assert pool["replicaCount"] == "1"
    assert payload["jobSpec"].get("scheduling", {}).get("strategy", "STANDARD") == "STANDARD"
    code = pool["pythonPackageSpec"]
    assert code["pythonModule"] == "mine.evaluate"
    assert code["args"] == [
        "--num-threads",
        "4",
        "--candidate-model-dir=gs://b/c",
        "--data=gs://b/d",
        "--metrics-output=gs://b/e/metrics.json",
        f"{CHAMPION_FLAG}=gs://b/champ",
    ]
    without = evaluation_job_request(request, None)
    assert not any(arg.startswith(CHAMPION_FLAG) for arg in without.args)


def test_evaluate_model_signature_defaults_equal_the_one_definition() -> None:
    signature = inspect.signature(evaluate_model.python_func)
    request = inspect.signature(EvaluationRequest)
    for name in EvaluationDefaults.__dataclass_fields__:
        assert signature.parameters[name].default == getattr(EVALUATION, name), name
        assert request.parameters[name].default == getattr(EVALUATION, name), name
