"""A problem as people and programs read it: its line, its JSON form, the error that carries
several, and the warnings a builder emits."""

from __future__ import annotations

import warnings

import pytest

from vertex_retrain.specs.problems import (
    JobSpecError,
    JobSpecWarning,
    Problem,
    error,
    errors_of,
    join_choices,
    raise_or_warn,
    warning,
    warnings_of,
)

GPU = error("jobSpec.a.acceleratorCount", 3, "Not a valid count.", ["2", "4"], "gpu-count")
SPOT = warning("jobSpec.scheduling", {"strategy": "SPOT"}, "No checkpoints.", (), "spot")


def test_error_and_warning_build_the_whole_problem() -> None:
    built = error("jobSpec.a.acceleratorCount", 3, "Not a valid count.", ["2", "4"], "gpu-count")
    assert built == Problem(
        "error", "jobSpec.a.acceleratorCount", 3, "Not a valid count.", ("2", "4"), "gpu-count"
    )
    built = warning("jobSpec.scheduling", {"strategy": "SPOT"}, "No checkpoints.", (), "spot")
    assert built == Problem("warning", "jobSpec.scheduling", {"strategy": "SPOT"},
                            "No checkpoints.", (), "spot")  # fmt: skip
    assert warning("f", 1, "m", ["a"], "c") == Problem("warning", "f", 1, "m", ("a",), "c")
    assert error("f", None, "m") == Problem("error", "f", None, "m", (), "")
    assert warning("f", None, "m") == Problem("warning", "f", None, "m", (), "")


def test_problem_to_dict_holds_every_attribute() -> None:
    assert GPU.to_dict() == {
        "severity": "error", "field": "jobSpec.a.acceleratorCount", "value": 3,
        "message": "Not a valid count.", "alternatives": ["2", "4"], "code": "gpu-count",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("problem", "line"),
    [
        (GPU, "error: jobSpec.a.acceleratorCount = 3: Not a valid count. Valid alternatives: "
              "2; 4."),
        (SPOT, 'warning: jobSpec.scheduling = {"strategy": "SPOT"}: No checkpoints.'),
        (error("f", None, "Missing."), "error: f = (missing): Missing."),
        (error("f", {"b": 1, "a": 2}, "m"), 'error: f = {"a": 2, "b": 1}: m'),
        (error("f", {1, 2}, "m"), "error: f = {1, 2}: m"),  # not JSON: its repr
        (error("f", float("nan"), "m"), "error: f = NaN: m"),
    ],
)  # fmt: skip
def test_problem_describe_is_one_line_with_field_value_reason_and_choices(
    problem: Problem, line: str
) -> None:
    assert problem.describe() == line


def test_problem_describe_can_leave_the_field_out() -> None:
    assert GPU.describe(show_field=False) == ("error: Not a valid count. Valid alternatives: 2; 4.")


@pytest.mark.parametrize(
    ("items", "text"), [([1], "1"), ([1, 2], "1 or 2"), (["a", "b", "c"], "a, b or c")]
)
def test_join_choices_says_or_before_the_last(items: list[object], text: str) -> None:
    assert join_choices(items) == text


def test_errors_of_and_warnings_of_split_by_severity() -> None:
    assert errors_of([SPOT, GPU, SPOT]) == [GPU]
    assert warnings_of([SPOT, GPU, SPOT]) == [SPOT, SPOT]


def test_job_spec_error_lists_every_error_and_keeps_the_warnings() -> None:
    other = error("displayName", None, "A job needs a name.")
    raised = JobSpecError([GPU, SPOT, other])
    assert raised.problems == (GPU, SPOT, other)
    assert (raised.errors, raised.warnings) == ([GPU, other], [SPOT])
    assert str(raised) == "\n".join(
        [
            "invalid job spec: 2 error(s)",
            f"  - {GPU.describe()}",
            f"  - {other.describe()}",
        ]
    )
    assert raised.args == (str(raised),)


def test_raise_or_warn_raises_on_any_error_and_warns_otherwise() -> None:
    with pytest.raises(JobSpecError) as caught:
        raise_or_warn([SPOT, GPU])
    assert caught.value.problems == (SPOT, GPU)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        raise_or_warn([SPOT, SPOT])
    assert [(w.category, str(w.message)) for w in seen] == [(JobSpecWarning, SPOT.describe())] * 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        raise_or_warn([])  # nothing: neither raised nor warned


def test_raise_or_warn_points_the_warning_at_the_caller_s_caller() -> None:
    import inspect

    def build() -> None:
        raise_or_warn([SPOT])  # stacklevel 3: the line that called build()

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
        build()
    assert (seen[0].filename, seen[0].lineno) == (__file__, line)
