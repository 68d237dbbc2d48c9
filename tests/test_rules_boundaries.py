"""Both sides of each limit in vertex_retrain/rules, and the exact words of its refusals.

Written against the mutants `make mutants` found alive (docs/mutation-testing.md): a limit
moved by one, a comparison that admits its bound, a message that lost its words.
"""

from __future__ import annotations

import datetime
import math
import re
from dataclasses import dataclass

import pytest

from vertex_retrain.rules.aliases import aliases_to_move, is_valid_alias
from vertex_retrain.rules.idempotency import task_key
from vertex_retrain.rules.job_failure import (
    FAILED,
    CapacityVerdict,
    JobFailure,
    capacity_verdict,
    fails_again,
)
from vertex_retrain.rules.retention import check_keep_last_n, deployments_to_prune
from vertex_retrain.rules.spot_fallback import FallbackPolicy, decide_fallback
from vertex_retrain.rules.traffic import (
    TrafficSplitError,
    allocate,
    check_percentage,
    largest_share,
    reassign,
    scale,
    serving_shares,
    unallocate,
    validate_split,
)
from vertex_retrain.rules.trials import best_trial_or_none, check_goal, choose_best_trial


def _raises(error: type[Exception], message: str) -> pytest.RaisesContext[Exception]:
    return pytest.raises(error, match=f"^{re.escape(message)}$")


# --- aliases ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("length", "valid"), [(2, True), (1, False), (128, True), (129, False)])
def test_alias_length_is_two_to_128(length: int, valid: bool) -> None:
    assert is_valid_alias("a" * length) is valid


@pytest.mark.parametrize("name", ["champion_alias", "challenger_alias"])
def test_aliases_to_move_names_the_bad_alias_and_the_pattern(name: str) -> None:
    roles = {"champion_alias": "champion", "challenger_alias": "challenger", name: "default"}
    with _raises(
        ValueError,
        f"{name} must be a version alias other than 'default' (which moves with the "
        "champion), matching [a-z][a-zA-Z0-9-]{0,126}[a-z0-9], e.g. 'champion' or "
        "'candidate-2'; got 'default'",
    ):
        aliases_to_move(make_champion=True, **roles)


def test_aliases_to_move_refuses_one_alias_for_both_roles_in_words() -> None:
    with _raises(ValueError, "champion_alias and challenger_alias must differ; both are 'x1'"):
        aliases_to_move(make_champion=False, champion_alias="x1", challenger_alias="x1")


# --- retention -------------------------------------------------------------------------------


@pytest.mark.parametrize(("keep", "valid"), [(1, False), (2, True)])
def test_keep_last_n_floor_is_two(keep: int, valid: bool) -> None:
    if valid:
        assert check_keep_last_n(keep) == keep
    else:
        with _raises(
            ValueError,
            "keep_last_n must be at least 2 (the new version and a rollback target); got 1",
        ):
            check_keep_last_n(keep)


@pytest.mark.parametrize("bad", [True, 2.0, "2", None])
def test_keep_last_n_must_be_an_integer_in_words(bad: object) -> None:
    with _raises(ValueError, f"keep_last_n must be an integer of at least 2; got {bad!r}"):
        check_keep_last_n(bad)


def test_deployments_to_prune_keeps_exactly_the_newest_n() -> None:
    newest_first = ["4", "3", "2", "1"]
    assert deployments_to_prune(newest_first, {}, keep_last_n=2) == ["2", "1"]
    assert deployments_to_prune(newest_first, {}, keep_last_n=3) == ["1"]


@pytest.mark.parametrize(("share", "pruned"), [(0, True), (1, False)])
def test_deployments_to_prune_spares_any_share_of_traffic(share: int, pruned: bool) -> None:
    assert (deployments_to_prune(["3", "2", "1"], {"1": share}, keep_last_n=2) == ["1"]) is pruned


def test_deployments_to_prune_prunes_a_model_missing_from_the_split() -> None:
    assert deployments_to_prune(["3", "2", "1"], {"3": 100}, keep_last_n=2) == ["1"]


def test_deployments_to_prune_checks_keep_last_n() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        deployments_to_prune(["3", "2", "1"], {}, keep_last_n=1)


# --- spot fallback ---------------------------------------------------------------------------

_STOCKOUT = JobFailure(state="JOB_STATE_FAILED", message="STOCKOUT: no capacity")


def _decide(**changes: object) -> tuple[bool, str, int]:
    arguments: dict[str, object] = {
        "strategy": "SPOT",
        "failure": _STOCKOUT,
        "policy": FallbackPolicy(enabled=True, deadline_seconds=0),
        "elapsed_seconds": 0,
        "job_timeout_seconds": 0,
        **changes,
    }
    decision = decide_fallback(**arguments)  # type: ignore[arg-type]
    return decision.fall_back, decision.reason, decision.timeout_seconds


@pytest.mark.parametrize("deadline", [-1.0, math.inf, math.nan])
def test_fallback_policy_refuses_a_bad_deadline_in_words(deadline: float) -> None:
    with _raises(
        ValueError,
        "spot_fallback_deadline_seconds must be a finite number of seconds, 0 or more "
        f"(0: only the job's timeout applies); got {deadline!r}",
    ):
        FallbackPolicy(enabled=True, deadline_seconds=deadline)


def test_fallback_policy_accepts_a_zero_deadline() -> None:
    assert FallbackPolicy(enabled=True, deadline_seconds=0.0).deadline_seconds == 0.0


def test_fallback_reasons_name_why_not() -> None:
    off = FallbackPolicy(enabled=False)
    assert _decide(policy=off) == (False, "spot fallback is off", 0)
    assert _decide(strategy="STANDARD") == (
        False,
        "the job ran with strategy STANDARD, not SPOT",
        0,
    )
    assert _decide(failure=JobFailure(state="JOB_STATE_FAILED", message="exit 1")) == (
        False,
        "the job failed for another reason than lost Spot capacity: no structured error or "
        "known message says it lost capacity (unknown failure)",
        0,
    )
    late = FallbackPolicy(enabled=True, deadline_seconds=600)
    assert _decide(policy=late, elapsed_seconds=600) == (
        False,
        "the Spot attempts took 600 s of the 600 s deadline; no time is left for on-demand",
        0,
    )


def test_fallback_reason_names_the_evidence_and_its_source() -> None:
    assert _decide() == (
        True,
        "Spot capacity was lost (its message says 'STOCKOUT'; source: the local Spot "
        "rehearsal's failure after Vertex's six restarts "
        "(vertex_retrain.backends.local.jobs.spot.stockout_message)); running on demand "
        "(STANDARD) from the Spot attempts' checkpoints",
        0,
    )


@pytest.mark.parametrize(
    ("job_timeout", "deadline", "elapsed", "expected"),
    [
        (0, 0, 0, 0),  # neither: no timeout
        (3600, 0, 0, 3600),  # the job's own timeout
        (-5, 0, 0, 0),  # a negative timeout is none
        (1, 0, 0, 1),  # the smallest positive timeout is kept
        (0, 600, 100, 500),  # what is left of the deadline
        (3600, 600, 100, 500),  # the deadline cuts the job's timeout
        (300, 600, 100, 300),  # the job's timeout is shorter than what is left
        (0, 600.9, 100.5, 500),  # seconds left are rounded down
    ],
)
def test_fallback_timeout_is_the_job_timeout_cut_to_the_deadline(
    job_timeout: int, deadline: float, elapsed: float, expected: int
) -> None:
    policy = FallbackPolicy(enabled=True, deadline_seconds=deadline)
    fall_back, _, timeout = _decide(
        policy=policy, elapsed_seconds=elapsed, job_timeout_seconds=job_timeout
    )
    assert (fall_back, timeout) == (True, expected)


# --- traffic ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "valid"), [(-1, False), (0, True), (100, True), (101, False)])
def test_check_percentage_takes_0_to_100(value: int, valid: bool) -> None:
    if valid:
        assert check_percentage(value) == value
    else:
        with _raises(
            TrafficSplitError, f"traffic_percentage must be an integer from 0 to 100, got {value}"
        ):
            check_percentage(value)


@pytest.mark.parametrize("bad", [True, 50.0, "50"])
def test_check_percentage_refuses_what_is_not_an_int(bad: object) -> None:
    with _raises(TrafficSplitError, f"share must be an integer from 0 to 100, got {bad!r}"):
        check_percentage(bad, "share")


def test_validate_split_names_the_model_and_the_total() -> None:
    with _raises(
        TrafficSplitError,
        "traffic for deployed model '2' must be an integer from 0 to 100, got 101",
    ):
        validate_split({"1": 0, "2": 101})
    with _raises(
        TrafficSplitError,
        "traffic split {'1': 60, '2': 39} sums to 99; the shares of deployed models must sum "
        "to 100",
    ):
        validate_split({"1": 60, "2": 39})
    assert validate_split({}) == {}
    assert validate_split({"1": 100}) == {"1": 100}


def test_scale_to_zero_or_of_nothing() -> None:
    assert scale({"1": 60, "2": 40}, 0) == {"1": 0, "2": 0}
    assert scale({}, 50) == {}
    with _raises(
        TrafficSplitError,
        "cannot scale {'1': 0, '2': 0} to 50: every share is 0, so there is no proportion to keep",
    ):
        scale({"1": 0, "2": 0}, 50)


def test_scale_hands_leftover_points_to_the_largest_remainders() -> None:
    # 10/3 each: floors 3+3+3, one point left; equal remainders: the first listed takes it.
    assert scale({"1": 1, "2": 1, "3": 1}, 10) == {"1": 4, "2": 3, "3": 3}
    # 1*50/3 = 16.67, 2*50/3 = 33.33: the larger remainder (2/3) goes to "1".
    assert scale({"1": 1, "2": 2}, 50) == {"1": 17, "2": 33}


def test_allocate_refusals_in_words() -> None:
    with _raises(TrafficSplitError, "deployed model '1' is already in the split"):
        allocate({"1": 100}, "1", 50)
    with _raises(
        TrafficSplitError,
        "the endpoint has no deployed models, so the first one must take 100% of the traffic, "
        "not 99%; pass traffic_percentage=100",
    ):
        allocate({}, "1", 99)
    assert allocate({}, "1", 100) == {"1": 100}
    with pytest.raises(TrafficSplitError, match="sums to 90"):
        allocate({"1": 90}, "2", 10)


def test_reassign_keeps_the_rest_in_proportion_and_checks_the_percentage() -> None:
    assert reassign({"1": 75, "2": 25}, "2", 50) == {"1": 50, "2": 50}
    assert reassign({"1": 100}, "1", 40) == {"1": 100}
    with pytest.raises(TrafficSplitError, match="got -1"):
        reassign({"1": 50, "2": 50}, "1", -1)


def test_unallocate_refusals_in_words() -> None:
    with _raises(TrafficSplitError, "deployed model '9' is not in the split; deployed: ['1', '2']"):
        unallocate({"2": 50, "1": 50}, "9")
    with _raises(
        TrafficSplitError,
        "undeploying deployed model '1' would leave the remaining traffic split at 0% "
        "({'2': 0}); give another deployed model traffic first (set_traffic_split) or "
        "undeploy the others first",
    ):
        unallocate({"1": 100, "2": 0}, "1")
    assert unallocate({"1": 100}, "1") == {}
    assert unallocate({"1": 50, "2": 30, "3": 20}, "1") == {"2": 60, "3": 40}
    with pytest.raises(TrafficSplitError, match="sums to 50"):
        unallocate({"1": 50}, "1")


# --- trials ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Trial:
    trial_id: str
    state: str = "SUCCEEDED"
    metric: float | None = 0.5


def test_check_goal_refusal_lists_the_goals() -> None:
    assert check_goal("MINIMIZE") == "MINIMIZE"
    with _raises(ValueError, "goal must be one of ('MAXIMIZE', 'MINIMIZE'), got 'maximize'."):
        check_goal("maximize")


@pytest.mark.parametrize(("goal", "winner"), [("MAXIMIZE", "2"), ("MINIMIZE", "1")])
def test_best_trial_follows_the_goal(goal: str, winner: str) -> None:
    trials = [_Trial("1", metric=0.25), _Trial("2", metric=0.75)]
    best = best_trial_or_none(trials, goal)
    assert best is not None and best.trial_id == winner


def test_best_trial_may_win_with_a_metric_of_zero() -> None:
    trials = [_Trial("1", metric=0.5), _Trial("2", metric=0.0)]
    best = best_trial_or_none(trials, "MINIMIZE")
    assert best is not None and best.trial_id == "2"


@pytest.mark.parametrize(("goal", "sign"), [("MAXIMIZE", 1.0), ("MINIMIZE", -1.0)])
def test_best_trial_tells_apart_the_largest_finite_values(goal: str, sign: float) -> None:
    # Doubled, both would overflow to infinity and tie: the goal's sign is exactly one.
    trials = [_Trial("1", metric=sign * 1.0e308), _Trial("2", metric=sign * 1.7e308)]
    best = best_trial_or_none(trials, goal)
    assert best is not None and best.trial_id == "2"


def test_best_trial_ties_put_numeric_ids_before_other_ids() -> None:
    trials = [_Trial("b"), _Trial("a"), _Trial("12"), _Trial("9")]
    best = best_trial_or_none(trials, "MAXIMIZE")
    assert best is not None and best.trial_id == "9"
    best = best_trial_or_none([_Trial("b"), _Trial("a")], "MAXIMIZE")
    assert best is not None and best.trial_id == "a"


def test_choose_best_trial_refusal_names_the_study_metric_and_states() -> None:
    trials = [_Trial("1", state="FAILED"), _Trial("2", state="INFEASIBLE"), _Trial("3", "X")]
    with _raises(
        ValueError,
        "no SUCCEEDED trial of job 7 has a final value for metric 'auc' (trial states: "
        "FAILED, INFEASIBLE, X). Check that the trainer reports that metric with "
        "cloudml-hypertune and that some trials succeeded.",
    ):
        choose_best_trial(trials, metric_id="auc", goal="MAXIMIZE", study="job 7")
    with pytest.raises(ValueError, match=r"of the study .*\(trial states: no trials\)"):
        choose_best_trial([], metric_id="auc", goal="MAXIMIZE")


@pytest.mark.parametrize(("share", "serving"), [(0, False), (1, True)])
def test_serving_shares_keeps_a_share_of_one_point(share: int, serving: bool) -> None:
    assert ("2" in serving_shares({"1": 100 - share, "2": share})) is serving


def test_largest_share_goes_by_share_before_id() -> None:
    assert largest_share({"9": 10, "10": 90}) == "10"
    assert largest_share({"1": 50, "2": 50}) == "2"
    assert largest_share({}) == ""


@pytest.mark.parametrize(
    ("deadline", "expected"),
    [(0.5, (False, 0)), (1.0, (True, 1)), (1.5, (True, 1)), (2.0, (True, 2))],
)
def test_fallback_deadline_below_one_second_leaves_no_time(
    deadline: float, expected: tuple[bool, int]
) -> None:
    fall_back, _, timeout = _decide(policy=FallbackPolicy(enabled=True, deadline_seconds=deadline))
    assert (fall_back, timeout) == expected


# --- job failure -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("failure", "verdict"),
    [
        (
            JobFailure("JOB_STATE_CANCELLED", "STOCKOUT"),
            CapacityVerdict(
                False,
                "the job ended JOB_STATE_CANCELLED, which no loss of capacity causes",
                "aiplatform_v1 JobState",
            ),
        ),
        (
            JobFailure("JOB_STATE_FAILED", "STOCKOUT", code=3),
            CapacityVerdict(
                False,
                "its error code is INVALID_ARGUMENT, a user error",
                "GCPC 2.22 job_remote_runner._JOB_USER_ERROR_CODES",
            ),
        ),
        (
            JobFailure("JOB_STATE_FAILED", "STOCKOUT", reasons=("RATE_LIMIT_EXCEEDED",)),
            CapacityVerdict(
                False,
                "its error reason is RATE_LIMIT_EXCEEDED: a quota, not capacity",
                "error_reason.proto",
            ),
        ),
        (
            JobFailure("JOB_STATE_FAILED", "exit 1"),
            CapacityVerdict(
                False,
                "no structured error or known message says it lost capacity (unknown failure)",
            ),
        ),
    ],
)
def test_capacity_verdict_names_what_refused_and_its_source(
    failure: JobFailure, verdict: CapacityVerdict
) -> None:
    found = capacity_verdict(failure)
    assert found == verdict
    assert found.lost_capacity is False


def test_capacity_verdict_from_a_structured_reason_names_compute_engine() -> None:
    verdict = capacity_verdict(JobFailure("JOB_STATE_FAILED", "", reasons=("STOCKOUT",)))
    assert verdict.lost_capacity is True
    assert verdict.evidence == "its error reason is STOCKOUT"
    assert verdict.source.startswith("Compute Engine, 'Troubleshooting resource availability")


# --- idempotency -----------------------------------------------------------------------------


def test_task_key_is_stable_across_releases() -> None:
    # A job started before an upgrade is found by the re-run after it: the digest's text
    # (its field names and their order) is part of the contract.
    assert task_key("train", {"lr": 0.1}) == "5ec8107fb610d960a52e"


def test_task_key_writes_other_values_as_text() -> None:
    day = datetime.date(2026, 1, 5)
    assert task_key("train", {"day": day}) == task_key("train", {"day": "2026-01-05"})


@pytest.mark.parametrize(
    ("failure", "again"),
    [
        (JobFailure(FAILED, "The replica workerpool0-0 exited with a non-zero status of 1"), True),
        (JobFailure(FAILED, "Replicas low on memory: workerpool0"), True),
        (JobFailure(FAILED, "denied", code=7), True),  # PERMISSION_DENIED: the user's error
        (JobFailure(FAILED, "ZONE_RESOURCE_POOL_EXHAUSTED"), False),  # capacity may return
        (JobFailure(FAILED, "Internal error."), False),  # unknown: maybe Vertex's own
    ],
)
def test_job_failure_fails_again_only_for_known_failures_that_are_not_capacity(
    failure: JobFailure, again: bool
) -> None:
    assert fails_again(failure) is again
