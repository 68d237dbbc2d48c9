"""Fuzzing command-line input with hypothesis: `--param NAME=VALUE` overrides and cron
expressions.

test_params.py already checks that arbitrary text yields known names or `ParameterError`,
and that well-formed values round-trip. This adds the hostile shapes those strategies never
draw (out-of-range exponents, NaN spellings, digits from other scripts, deep nesting, stray
whitespace) and a stronger property: whatever is accepted has its declared type and can
travel to Vertex as JSON (a protobuf Value holds no NaN or infinity).
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from vertex_retrain.cli.params import ParameterError, parse_overrides
from vertex_retrain.schedules import ScheduleError, next_run_times, validate_cron

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "0")) or None
FUZZ = settings(max_examples=EXAMPLES or 400, deadline=None)

PARAMETERS: dict[str, dict[str, Any]] = {
    "epochs": {"parameterType": "NUMBER_INTEGER", "defaultValue": 4.0},
    "learning_rate": {"parameterType": "NUMBER_DOUBLE", "defaultValue": 0.005},
    "tune": {"parameterType": "BOOLEAN", "defaultValue": False},
    "shops": {"parameterType": "LIST", "defaultValue": []},
    "machine_spec": {"parameterType": "STRUCT", "defaultValue": {}},
    "model_name": {"parameterType": "STRING", "defaultValue": "recs"},
}
EXPECTED_TYPE: dict[str, type] = {
    "NUMBER_INTEGER": int,
    "NUMBER_DOUBLE": float,
    "BOOLEAN": bool,
    "LIST": list,
    "STRUCT": dict,
    "STRING": str,
}
ATOMS = st.sampled_from(
    [
        "1e999", "-1e400", "1E309", "1e-400", "NaN", "nan", "Infinity", "-Infinity", "inf",
        "-0", "+3", "0x10", "1_000", "\u0663", "\uff13", " 3", "3 ", "9" * 30, "1.5",
        "true", "TRUE", "True ", "yes", "null", '""', '"\\ud800"', "[]", "{}", "",
    ]
)  # fmt: skip
# Nested JSON-ish text built from the atoms, valid or not, shallow or very deep.
NESTED = st.recursive(
    ATOMS,
    lambda inner: (
        st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]")
        | st.dictionaries(st.sampled_from(['"a"', '"b"', "c"]), inner, max_size=3).map(
            lambda d: "{" + ", ".join(f"{k}: {v}" for k, v in d.items()) + "}"
        )
    ),
    max_leaves=6,
)
DEEP = st.builds(
    lambda depth, atom, close: "[" * depth + atom + ("]" * depth if close else ""),
    st.integers(min_value=500, max_value=200_000),
    ATOMS,
    st.booleans(),
)
VALUES = ATOMS | NESTED | DEEP | st.text(st.characters(codec="utf-8"), max_size=20)
NAMES = st.sampled_from([*PARAMETERS, " epochs", "epochs ", "Epochs", "", "unknown"])
PAIRS = st.builds(lambda name, value: f"{name}={value}", NAMES, VALUES) | st.text(max_size=10)


@FUZZ
@given(st.lists(PAIRS, max_size=5))
@example(["shops=[1E310]"])  # found by a 3000-example run: JSON overflowing to infinity
@example(['machine_spec={"a": [-1e400]}'])
def test_parse_overrides_accepts_only_typed_values_vertex_can_carry(pairs: list[str]) -> None:
    try:
        values = parse_overrides(pairs, PARAMETERS)
    except ParameterError as error:
        assert error.problems
        assert all(problem.startswith("--param ") for problem in error.problems)
        return
    for name, value in values.items():
        expected = EXPECTED_TYPE[PARAMETERS[name]["parameterType"]]
        assert type(value) is expected, (name, value)
        # Raises on NaN or infinity anywhere inside: Vertex could not carry the value.
        json.dumps(value, allow_nan=False)


CRON_TOKENS = st.sampled_from(
    [
        "*", "*/5", "*/0", "0/0", "0", "00", "59", "60", "24", "31", "32", "1-5", "5-1",
        "1-5/2", "MON", "mon-fri", "SUN#2", "JAN", "DEC-JAN", "L", "W", "?", "H", "1,2,,",
        "-1", "7", "8", "9" * 20, "", "TZ=UTC", "@daily",
    ]
)  # fmt: skip
CRONS = st.lists(CRON_TOKENS | st.text(max_size=4), max_size=7).map(" ".join) | st.text(max_size=30)
AFTER = datetime(2026, 1, 1, tzinfo=UTC)


@FUZZ
@given(CRONS)
def test_validate_cron_returns_a_firing_expression_or_names_the_problem(cron: str) -> None:
    try:
        normalised = validate_cron(cron)
    except ScheduleError as error:
        assert f"cron {cron!r}" in str(error)
        return
    assert len(normalised.split()) == 5 and validate_cron(normalised) == normalised
    (run,) = next_run_times(normalised, "Asia/Taipei", count=1, after=AFTER)
    assert run > AFTER
