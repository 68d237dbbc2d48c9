"""The rules both backends follow (vertex_retrain/rules), each tested once on its own.

tests/test_backends_parity.py shows the local and the Vertex backend following them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from vertex_retrain.rules.aliases import aliases_to_move, is_valid_alias, role_alias
from vertex_retrain.rules.flags import format_flag_value, parameter_flags
from vertex_retrain.rules.idempotency import registration_key, task_key
from vertex_retrain.rules.retention import check_keep_last_n, deployments_to_prune
from vertex_retrain.rules.traffic import largest_share, serving_shares, traffic_text
from vertex_retrain.rules.trials import best_trial_or_none, can_win, choose_best_trial

# --- flags ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (16.0, "16"),
        (16, "16"),
        (0.02, "0.02"),
        (-3.0, "-3"),
        (True, "true"),
        (False, "false"),
        ("adam", "adam"),
        (math.inf, "inf"),
        (math.nan, "nan"),
    ],
)
def test_format_flag_value_writes_integral_floats_as_integers(value: object, expected: str) -> None:
    assert format_flag_value(value) == expected


def test_parameter_flags_keeps_order_and_renders_each_value() -> None:
    assert parameter_flags({"embedding_dim": 16.0, "lr": 0.5, "opt": "adam"}) == [
        "--embedding_dim=16",
        "--lr=0.5",
        "--opt=adam",
    ]


# --- idempotency ----------------------------------------------------------------------------


def test_registration_key_is_the_model_and_its_artifact_never_the_run() -> None:
    assert registration_key(display_name="m", artifact_uri="gs://b/x") == "m:gs://b/x"
    assert registration_key(display_name="m", artifact_uri="gs://b/y") != "m:gs://b/x"


def test_task_key_follows_the_inputs_and_the_kind_not_the_run() -> None:
    inputs = {"dataset_uri": "gs://b/root/123/prepare/dataset", "lr": 0.1}
    assert task_key("train", inputs) == task_key("train", dict(reversed(inputs.items())))
    assert task_key("train", inputs) != task_key("train", {**inputs, "lr": 0.2})
    assert task_key("train", inputs) != task_key("evaluate", inputs)
    assert len(task_key("train", inputs)) == 20


# --- aliases --------------------------------------------------------------------------------


def test_aliases_to_move_champion_takes_default_with_it() -> None:
    roles = {"champion_alias": "production", "challenger_alias": "challenger"}
    assert aliases_to_move(make_champion=True, **roles) == ["production", "default"]
    assert aliases_to_move(make_champion=False, **roles) == ["challenger"]
    assert role_alias(make_champion=False, **roles) == "challenger"


@pytest.mark.parametrize(
    ("champion", "challenger", "message"),
    [
        ("default", "challenger", "champion_alias must be a version alias other than"),
        ("champion", "", "challenger_alias must be a version alias"),
        ("Champion", "challenger", "got 'Champion'"),
        ("same", "same", "must differ"),
    ],
)
def test_aliases_to_move_refuses_bad_aliases(champion: str, challenger: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        aliases_to_move(make_champion=True, champion_alias=champion, challenger_alias=challenger)


@pytest.mark.parametrize(
    ("alias", "valid"),
    [("champion", True), ("candidate-2", True), ("7", False), ("a", False), ("x-", False)],
)
def test_is_valid_alias_matches_the_registries_pattern(alias: str, valid: bool) -> None:
    assert is_valid_alias(alias) is valid


# --- keep_last_n ----------------------------------------------------------------------------


@pytest.mark.parametrize("value", [1, 0, -2, True, 2.0, "3"])
def test_check_keep_last_n_refuses_anything_but_an_integer_of_at_least_two(value: object) -> None:
    with pytest.raises(ValueError, match="keep_last_n must be"):
        check_keep_last_n(value)


def test_deployments_to_prune_spares_the_newest_serving_and_protected() -> None:
    newest_first = ["5", "4", "3", "2", "1"]
    traffic = {"5": 100}
    assert deployments_to_prune(newest_first, traffic, keep_last_n=2) == ["3", "2", "1"]
    assert deployments_to_prune(
        newest_first, {"5": 70, "2": 30}, keep_last_n=2, protected={"3"}
    ) == ["1"]
    assert deployments_to_prune(newest_first, traffic, keep_last_n=5) == []


# --- best trial -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Trial:
    trial_id: str
    state: str
    metric: float | None


def test_best_trial_ties_go_to_the_lowest_numeric_trial_id() -> None:
    trials = [Trial("12", "SUCCEEDED", 0.5), Trial("9", "SUCCEEDED", 0.5)]
    assert best_trial_or_none(trials, "MAXIMIZE") is trials[1]
    assert best_trial_or_none(trials, "MINIMIZE") is trials[1]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_best_trial_never_picks_a_non_finite_value(bad: float) -> None:
    trials = [Trial("1", "SUCCEEDED", bad), Trial("2", "SUCCEEDED", 0.1)]
    assert not can_win(trials[0])
    assert best_trial_or_none(trials, "MAXIMIZE") is trials[1]
    assert best_trial_or_none(trials, "MINIMIZE") is trials[1]


def test_best_trial_never_picks_a_trial_that_did_not_succeed() -> None:
    trials = [
        Trial("1", "INFEASIBLE", 0.99),
        Trial("2", "STOPPING", 0.98),
        Trial("3", "SUCCEEDED", None),
        Trial("4", "SUCCEEDED", 0.2),
    ]
    assert best_trial_or_none(trials, "MAXIMIZE") is trials[3]


def test_choose_best_trial_without_a_winner_names_the_metric_and_states() -> None:
    trials = [Trial("1", "INFEASIBLE", 0.9), Trial("2", "SUCCEEDED", math.nan)]
    with pytest.raises(ValueError, match=r"no SUCCEEDED trial of study-3 .* 'ndcg' .*INFEASIBLE"):
        choose_best_trial(trials, metric_id="ndcg", goal="MAXIMIZE", study="study-3")
    with pytest.raises(ValueError, match="goal must be one of"):
        choose_best_trial(trials, metric_id="ndcg", goal="maximise")


# --- traffic --------------------------------------------------------------------------------


def test_serving_shares_drops_zero_shares_and_largest_share_breaks_ties_by_id() -> None:
    assert serving_shares({"1": 0, "2": 60, "3": 40}) == {"2": 60, "3": 40}
    assert largest_share({"2": 50, "3": 50}) == "3"
    assert largest_share({}) == ""


def test_traffic_text_says_which_number_is_an_id_and_which_a_version() -> None:
    # "deployed model 2" next to "version 3" read as a version.
    assert traffic_text({"1": 10, "2": 90}, {"2": "3"}) == (
        "90% to deployed model id 2 (version 3), 10% to deployed model id 1"
    )
    assert traffic_text({"2": 50, "1": 50}, {}) == (
        "50% to deployed model id 1, 50% to deployed model id 2"
    )
    assert traffic_text({"2": 100}, {"5": "3", "2": ""}) == "100% to deployed model id 2"
    assert traffic_text({}, {"2": "3"}) == ""
