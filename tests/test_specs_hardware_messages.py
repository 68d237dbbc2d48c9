"""The exact problems the machine and GPU rules report: field, value, words, alternatives, code.

tests/test_specs_cases.py checks that a rule fires at the right field; these pin down what it
says, so a rule that loses a word of its message, an alternative or its code fails a test.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from vertex_retrain.specs.hardware_rules import check_machine_spec
from vertex_retrain.specs.machine_catalog import load_catalog
from vertex_retrain.specs.problems import Problem

TODAY = dt.date(2026, 11, 29)
T4, V100, P100 = "NVIDIA_TESLA_T4", "NVIDIA_TESLA_V100", "NVIDIA_TESLA_P100"
LIVE_N1 = tuple(f"acceleratorType {a}" for a in (T4, V100, "NVIDIA_TESLA_P4"))
STARVES = "too small to feed the GPUs (input pipeline starves; the job may not even write logs)."


def _error(field: str, value: Any, message: str, *alternatives: str, code: str) -> Problem:
    return Problem("error", f"m.{field}", value, message, alternatives, code)


def _warning(field: str, value: Any, message: str, *alternatives: str, code: str) -> Problem:
    return Problem("warning", f"m.{field}", value, message, alternatives, code)


def _problems(spec: Any, today: dt.date = TODAY) -> list[Problem]:
    return check_machine_spec(spec, "m", load_catalog(), today=today)


def _spec(machine: str, acc: str | None = None, count: Any = None, **more: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"machineType": machine, **more}
    if acc is not None:
        spec["acceleratorType"] = acc
    if count is not None:
        spec["acceleratorCount"] = count
    return spec


def test_check_machine_spec_that_is_no_object_in_words() -> None:
    assert _problems(3) == [
        Problem("error", "m", 3, "machineSpec must be an object.", (), "type"),
    ]


@pytest.mark.parametrize("name", [None, "", 8])
def test_check_machine_spec_without_a_machine_type_in_words(name: Any) -> None:
    spec = {} if name is None else {"machineType": name}
    assert _problems(spec) == [
        _error(
            "machineType",
            name,
            "Every worker pool needs a machine type.",
            "n1-standard-4",
            "n1-standard-8",
            code="machine-missing",
        )
    ]


@pytest.mark.parametrize(
    ("name", "alternatives"),
    [
        ("n1-standard-7", ("n1-standard-8", "n1-standard-4", "n1-standard-96")),
        ("zzz", ("n1-standard-4", "n1-standard-8", "a2-highgpu-1g", "g2-standard-8")),
    ],
)
def test_check_machine_spec_unknown_machine_in_words(
    name: str, alternatives: tuple[str, ...]
) -> None:
    message = "Unknown machine type for Vertex AI training (catalog v2)."
    assert _problems(_spec(name)) == [
        _error("machineType", name, message, *alternatives, code="unknown-machine")
    ]


@pytest.mark.parametrize("count", [-1, "abc", 1.5])
def test_check_machine_spec_bad_accelerator_count_in_words(count: Any) -> None:
    assert _problems(_spec("n1-standard-4", T4, count)) == [
        _error(
            "acceleratorCount",
            count,
            "acceleratorCount must be a non-negative integer.",
            "acceleratorCount 1",
            code="type",
        )
    ]


@pytest.mark.parametrize("count", [0, "2"])
def test_check_machine_spec_count_zero_or_a_string_is_read(count: Any) -> None:
    # Zero GPUs and no type is a CPU machine; "2" is read as 2 (a valid T4 count).
    acc = None if count == 0 else T4
    assert _problems(_spec("n1-standard-8", acc, count)) == []


def test_check_machine_spec_topology_on_a_machine_that_is_no_tpu_in_words() -> None:
    assert _problems(_spec("n1-standard-4", tpuTopology="2x2")) == [
        _error(
            "tpuTopology",
            "2x2",
            "tpuTopology applies only to TPU machine types, not n1-standard-4.",
            "remove tpuTopology",
            "machineType ct5lp-hightpu-4t with tpuTopology 2x2",
            code="tpu-topology",
        )
    ]


@pytest.mark.parametrize("acc", [None, "", "ACCELERATOR_TYPE_UNSPECIFIED"])
def test_check_machine_spec_bundled_gpus_left_unnamed_in_words(acc: str | None) -> None:
    assert _problems(_spec("g2-standard-24", acc)) == [
        _error(
            "acceleratorType",
            None,
            "g2-standard-24 carries 2 × NVIDIA_L4; name them in the machine spec.",
            "acceleratorType NVIDIA_L4 with acceleratorCount 2",
            code="gpu-missing",
        )
    ]


@pytest.mark.parametrize(
    ("machine", "alternatives"),
    [
        ("n1-standard-4", tuple(f"{a} with acceleratorCount 1" for a in LIVE_N1)),
        ("e2-standard-4", ()),  # GPUs attach to n1 machines only
    ],
)
def test_check_machine_spec_count_without_a_type_in_words(
    machine: str, alternatives: tuple[str, ...]
) -> None:
    assert _problems(_spec(machine, None, 2)) == [
        _error(
            "acceleratorType",
            None,
            "acceleratorCount 2 without an acceleratorType.",
            *alternatives,
            code="gpu-missing",
        )
    ]


def test_check_machine_spec_unknown_accelerator_in_words() -> None:
    assert _problems(_spec("n1-standard-4", "NVIDIA_TESLA_T5", 1)) == [
        _error(
            "acceleratorType",
            "NVIDIA_TESLA_T5",
            "Not a Vertex AI AcceleratorType.",
            T4,
            "NVIDIA_TESLA_P4",
            "NVIDIA_TESLA_K80",
            code="unknown-gpu",
        )
    ]


RETIRED_NOTE = (
    "Unsupported for Vertex AI training since 2026-09-15 (source article, Oct 2026 GPU list)."
)


@pytest.mark.parametrize(
    ("today", "problem"),
    [
        (
            dt.date(2026, 9, 14),
            _warning(
                "acceleratorType",
                P100,
                f"{P100} retires on 2026-09-15: {RETIRED_NOTE}",
                *LIVE_N1,
                code="gpu-retiring",
            ),
        ),
        (
            dt.date(2026, 9, 15),
            _error(
                "acceleratorType",
                P100,
                f"{P100} is retired since 2026-09-15: {RETIRED_NOTE}",
                *LIVE_N1,
                "machineType g2-standard-8",
                code="gpu-retired",
            ),
        ),
    ],
)
def test_check_machine_spec_retiring_then_retired_gpu_in_words(
    today: dt.date, problem: Problem
) -> None:
    assert _problems(_spec("n1-standard-4", P100, 1), today) == [problem]


def test_check_machine_spec_gpu_the_catalog_has_no_rules_for_in_words() -> None:
    assert _problems(_spec("n1-standard-4", "NVIDIA_GB200", 1)) == [
        _warning(
            "acceleratorType",
            "NVIDIA_GB200",
            "The catalog (v2) has no rules for NVIDIA_GB200; it was not checked.",
            code="gpu-unchecked",
        )
    ]


def test_check_machine_spec_tpu_accelerator_on_a_gpu_machine_in_words() -> None:
    assert _problems(_spec("n1-standard-8", "TPU_V3", 8)) == [
        _error(
            "acceleratorType",
            "TPU_V3",
            "TPU_V3 is a TPU; it runs only on TPU machine types, not n1-standard-8.",
            "machineType cloud-tpu",
            code="gpu-family",
        )
    ]


@pytest.mark.parametrize(
    ("acc", "count", "alternatives"),
    [
        (T4, 1, (f"an n1 machine for {T4}, e.g. machineType n1-standard-8",)),
        # The machines that carry exactly that count of the GPU come first, alone.
        ("NVIDIA_L4", 2, ("machineType g2-standard-24",)),
    ],
)
def test_check_machine_spec_other_gpu_on_a_bundled_machine_in_words(
    acc: str, count: int, alternatives: tuple[str, ...]
) -> None:
    assert _problems(_spec("a2-highgpu-1g", acc, count)) == [
        _error(
            "acceleratorType",
            acc,
            f"a2-highgpu-1g comes with 1 × NVIDIA_TESLA_A100; {acc} cannot be attached to it.",
            "acceleratorType NVIDIA_TESLA_A100",
            *alternatives,
            code="gpu-family",
        )
    ]


A100_CARRIERS = tuple(
    f"machineType a2-{m}"
    for m in ("highgpu-1g", "highgpu-2g", "highgpu-4g", "highgpu-8g", "megagpu-16g")
)


@pytest.mark.parametrize(
    ("count", "carriers"),
    [
        (2, ("machineType a2-highgpu-2g",)),  # the machine that carries exactly two
        (0, A100_CARRIERS),  # none carries 0: every carrier of the GPU
    ],
)
def test_check_machine_spec_bundled_gpu_count_is_fixed_in_words(
    count: int, carriers: tuple[str, ...]
) -> None:
    assert _problems(_spec("a2-highgpu-1g", "NVIDIA_TESLA_A100", count)) == [
        _error(
            "acceleratorCount",
            count,
            "a2-highgpu-1g has exactly 1 × NVIDIA_TESLA_A100; the count is fixed by the machine "
            "type.",
            "acceleratorCount 1",
            *carriers,
            code="gpu-count",
        )
    ]


def test_check_machine_spec_bundled_gpu_of_its_count_passes() -> None:
    assert _problems(_spec("a2-highgpu-1g", "NVIDIA_TESLA_A100", 1)) == []


def test_check_machine_spec_bundled_gpu_on_an_n1_machine_in_words() -> None:
    g2 = ("g2-standard-4", "g2-standard-8", "g2-standard-12", "g2-standard-16")
    every_g2 = (*g2, "g2-standard-24", "g2-standard-32", "g2-standard-48", "g2-standard-96")
    assert _problems(_spec("n1-standard-8", "NVIDIA_L4", 1)) == [
        _error(
            "acceleratorType",
            "NVIDIA_L4",
            "NVIDIA_L4 cannot run on n1-standard-8 (n1 family): it comes only with "
            + ", ".join(every_g2)
            + ".",
            *(f"machineType {m}" for m in (*g2, "g2-standard-32")),
            *LIVE_N1,
            code="gpu-family",
        )
    ]


def test_check_machine_spec_bundled_gpu_on_another_family_in_words() -> None:
    a3 = ", ".join(f"a3-highgpu-{n}g" for n in (1, 2, 4, 8))
    assert _problems(_spec("e2-standard-8", "NVIDIA_H100_80GB", 2)) == [
        _error(
            "acceleratorType",
            "NVIDIA_H100_80GB",
            f"NVIDIA_H100_80GB cannot run on e2-standard-8 (e2 family): it comes only with {a3}.",
            "machineType a3-highgpu-2g",
            code="gpu-family",
        )
    ]


def test_check_machine_spec_n1_gpu_on_another_family_in_words() -> None:
    assert _problems(_spec("e2-standard-8", T4, 1)) == [
        _error(
            "acceleratorType",
            T4,
            f"{T4} cannot run on e2-standard-8 (e2 family): it attaches only to n1 machines.",
            "machineType n1-standard-4",
            code="gpu-family",
        )
    ]


@pytest.mark.parametrize(
    ("acc", "count", "choices", "nearest"),
    [
        (T4, 3, "1, 2 or 4", (2, 4)),
        (T4, 8, "1, 2 or 4", (2, 4)),
        (V100, 5, "1, 2, 4 or 8", (2, 4)),  # 2 and 8 are both 3 away: the smaller wins
        (V100, 7, "1, 2, 4 or 8", (4, 8)),
    ],
)
def test_check_machine_spec_n1_gpu_count_in_words(
    acc: str, count: int, choices: str, nearest: tuple[int, int]
) -> None:
    assert _problems(_spec("n1-standard-8", acc, count)) == [
        _error(
            "acceleratorCount",
            count,
            f"{acc} takes {choices} GPUs per machine, never {count}.",
            *(f"acceleratorCount {n}" for n in nearest),
            code="gpu-count",
        )
    ]


def test_check_machine_spec_machine_too_big_for_its_gpus_in_words() -> None:
    assert _problems(_spec("n1-standard-64", V100, 1)) == [
        _error(
            "machineType",
            "n1-standard-64",
            f"n1-standard-64 has 64 vCPUs and 240 GB, but 1 × {V100} can carry at most 12 vCPUs "
            "and 78 GB.",
            "acceleratorCount 8",
            "n1-standard-8 or smaller",
            code="gpu-machine-too-big",
        )
    ]


def test_check_machine_spec_too_big_names_at_most_two_counts() -> None:
    (problem,) = _problems(_spec("n1-highcpu-16", V100, 1))
    assert problem.alternatives == ("acceleratorCount 2", "acceleratorCount 4")


@pytest.mark.parametrize(
    ("machine", "count", "bigger"),
    [
        ("n1-standard-4", 4, "n1-standard-8"),  # 2 vCPUs a GPU: 8 for four
        ("n1-highmem-2", 1, "n1-highmem-4"),  # 4 vCPUs at least, in the same series
    ],
)
def test_check_machine_spec_machine_too_small_for_its_gpus_in_words(
    machine: str, count: int, bigger: str
) -> None:
    vcpus = machine.rsplit("-", 1)[1]
    assert _problems(_spec(machine, T4, count)) == [
        _warning(
            "machineType",
            machine,
            f"{machine} has only {vcpus} vCPUs for {count} × {T4}: {STARVES}",
            bigger,
            code="gpu-machine-too-small",
        )
    ]


@pytest.mark.parametrize(
    ("machine", "count"), [("n1-standard-4", 2), ("n1-standard-8", 4), ("n1-highmem-4", 1)]
)
def test_check_machine_spec_machine_just_big_enough_for_its_gpus(machine: str, count: int) -> None:
    assert _problems(_spec(machine, T4, count)) == []


def test_check_machine_spec_close_accelerator_names_half_alike() -> None:
    (problem,) = _problems(_spec("n1-standard-4", "B200", 1))
    assert problem.alternatives == ("NVIDIA_B200", "NVIDIA_GB200")


def test_check_machine_spec_reports_the_topology_beside_the_gpu_problems() -> None:
    problems = _problems(_spec("n1-standard-8", T4, 3, tpuTopology="2x2"))
    assert [(p.field, p.code) for p in problems] == [
        ("m.tpuTopology", "tpu-topology"),
        ("m.acceleratorCount", "gpu-count"),
    ]


@pytest.mark.parametrize(
    ("machine", "smaller"),
    [
        ("n1-standard-96", "n1-standard-32"),  # 96 vCPUs: exactly the cap of four T4s
        ("n1-highmem-96", "n1-highmem-32"),  # 96 vCPUs and 624 GB: exactly that cap
    ],
)
def test_check_machine_spec_too_big_suggests_a_count_whose_cap_it_meets(
    machine: str, smaller: str
) -> None:
    (problem,) = _problems(_spec(machine, T4, 1))
    assert problem.alternatives == ("acceleratorCount 4", f"{smaller} or smaller")


def test_check_machine_spec_machine_exactly_on_the_cap_passes() -> None:
    assert _problems(_spec("n1-highmem-96", T4, 4)) == []
