"""proto_check: a payload parsed into the aiplatform_v1 message of its kind, or refused."""

from __future__ import annotations

import pytest

from vertex_retrain.specs.proto_check import (
    PayloadProtoError,
    canonical_payload,
    check_payload_parses,
)


@pytest.mark.parametrize(
    ("kind", "message"), [("custom_job", "CustomJob"), ("tuning_job", "HyperparameterTuningJob")]
)
def test_check_payload_parses_refuses_an_unknown_field_naming_the_message(
    kind: str, message: str
) -> None:
    with pytest.raises(PayloadProtoError) as raised:
        check_payload_parses({"displayName": "x", "colour": "red"}, kind)  # type: ignore[arg-type]
    assert str(raised.value).startswith(
        f"payload is not a valid aiplatform_v1.{message}: Message type "
        f'"google.cloud.aiplatform.v1.{message}" has no field named "colour"'
    )


def test_check_payload_parses_returns_the_parsed_message() -> None:
    parsed = check_payload_parses({"displayName": "x", "maxTrialCount": 3}, "tuning_job")
    assert (parsed.display_name, parsed.max_trial_count) == ("x", 3)


def test_check_payload_parses_names_the_kinds_it_knows() -> None:
    with pytest.raises(ValueError) as raised:
        check_payload_parses({"displayName": "x"}, "model")  # type: ignore[arg-type]
    assert str(raised.value) == "kind must be 'custom_job' or 'tuning_job', got 'model'"


def test_canonical_payload_leaves_out_what_the_proto_holds_as_a_default() -> None:
    payload = {
        "displayName": "x",
        "jobSpec": {"scheduling": {"disableRetries": False, "timeout": "3600s"}},
    }
    assert canonical_payload(payload, "custom_job") == {
        "displayName": "x",
        "jobSpec": {"scheduling": {"timeout": "3600s"}},
    }
