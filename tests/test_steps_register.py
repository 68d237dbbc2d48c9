"""What register_model records with a version."""

from __future__ import annotations

from vertex_retrain.steps.register import (
    RegistrationRequest,
    serving_container,
    version_description,
)


def _request(**changes: object) -> RegistrationRequest:
    fields: dict = dict(
        backend="vertex",
        artifact_uri="gs://b/model",
        display_name="guess-your-order",
        serving_image_uri="eu.pkg.dev/p/r/serve:1",
    )
    fields.update(changes)
    return RegistrationRequest(**fields)


def test_version_description_carries_lineage_and_evaluation() -> None:
    text = version_description(
        _request(
            make_champion=True,
            pipeline_run="weekly-7",
            dataset_uri="gs://b/data",
            evaluation_metrics={"candidate_ndcg_at_10": 0.612345678, "is_better": 1.0},
        )
    )
    assert text.startswith("champion version; pipeline run weekly-7; data gs://b/data")
    assert "candidate_ndcg_at_10=0.612346" in text


def test_version_description_is_bounded() -> None:
    metrics = {f"metric_{i:04d}": float(i) for i in range(2000)}
    assert len(version_description(_request(evaluation_metrics=metrics))) == 2000


def test_serving_container_uses_command_only_when_given() -> None:
    assert "command" not in serving_container(_request())
    spec = serving_container(_request(serving_command=["python", "-m", "trainer.serve"]))
    assert spec["command"] == ["python", "-m", "trainer.serve"]
    assert spec["predictRoute"] == "/predict" and spec["healthRoute"] == "/health"


def test_version_description_records_the_serving_package_as_lineage() -> None:
    text = version_description(
        _request(serving_package_uri="gs://b/p/m-1.0-py3-none-any.whl", serving_extras=["serve"])
    )
    assert "serving package gs://b/p/m-1.0-py3-none-any.whl[serve]" in text
    assert "serving package" not in version_description(_request())

