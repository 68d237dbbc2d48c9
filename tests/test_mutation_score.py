"""The mutation score of `make mutants` (tests/mutation_score.py): parsing, folders, the floor."""

from __future__ import annotations

import fnmatch
import io

import pytest

from tests.mutation_score import Score, folder_of, main, overall, scores

SPECS = "vertex_retrain.specs.job_rules"
RULES = "vertex_retrain.rules.trials"


def _results(killed: int, survived: int, module: str = SPECS) -> list[str]:
    """``mutmut results --all true`` lines: ``killed`` kills, then ``survived`` survivors."""
    verdicts = ["killed"] * killed + ["survived"] * survived
    return [f"    {module}.x_f__mutmut_{i}: {v}\n" for i, v in enumerate(verdicts, 1)]


def _run(lines: list[str], monkeypatch: pytest.MonkeyPatch, *argv: str) -> int:
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(lines)))
    return main(list(argv))


def test_mutation_score_is_not_collected_as_a_test_module(pytestconfig: pytest.Config) -> None:
    patterns = pytestconfig.getini("python_files")
    assert not any(fnmatch.fnmatch("mutation_score.py", p) for p in patterns)
    assert any(fnmatch.fnmatch("test_mutation_score.py", p) for p in patterns)


def test_mutation_score_folder_of_functions_and_methods() -> None:
    assert folder_of(f"{SPECS}.x_validate__mutmut_3") == "vertex_retrain/specs"
    assert folder_of(f"{RULES}.xǁTrialǁcheck__mutmut_12") == "vertex_retrain/rules"


def test_mutation_score_counts_per_folder_and_overall() -> None:
    lines = [
        *_results(3, 1, SPECS),
        *_results(2, 0, RULES),
        f"    {RULES}.x_g__mutmut_1: timeout\n",
        f"    {RULES}.x_g__mutmut_2: caught by type check\n",
        f"    {RULES}.x_g__mutmut_3: no tests\n",
        f"    {RULES}.x_g__mutmut_4: suspicious\n",
        f"    {RULES}.x_g__mutmut_5: skipped\n",
        "\n",
    ]
    by_folder = scores(lines)
    assert by_folder == {
        "vertex_retrain/rules": Score(killed=4, total=6),
        "vertex_retrain/specs": Score(killed=3, total=4),
    }
    assert overall(by_folder) == Score(killed=7, total=10)
    assert overall(by_folder).percent == pytest.approx(70.0)


def test_mutation_score_refuses_an_unfinished_run_and_a_foreign_line() -> None:
    with pytest.raises(ValueError, match="was not checked"):
        scores([f"    {SPECS}.x_f__mutmut_1: not checked\n"])
    with pytest.raises(ValueError, match="not a mutmut result line"):
        scores(["Running stats\n"])


@pytest.mark.parametrize(("killed", "survived", "code"), [(9, 1, 0), (89, 11, 1)])
def test_mutation_score_floor_is_90_percent_by_default(
    killed: int, survived: int, code: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _run(_results(killed, survived), monkeypatch) == code


@pytest.mark.parametrize(("floor", "code"), [("75", 0), ("75.1", 1)])
def test_mutation_score_min_sets_the_floor(
    floor: str, code: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(_results(3, 1), monkeypatch, "--min", floor) == code
    out, err = capsys.readouterr()
    assert "vertex_retrain/specs" in out and "3/4" in out and "75.00%" in out
    assert ("below" in err) is bool(code)


@pytest.mark.parametrize("lines", [[], [f"    {SPECS}.x_f__mutmut_1: not checked\n"]])
def test_mutation_score_without_a_finished_run_exits_2(
    lines: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(lines, monkeypatch) == 2
    assert capsys.readouterr().err.startswith("mutation score: ")


def test_mutation_score_only_counts_the_mutants_run(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [*_results(1, 0, RULES), f"    {SPECS}.x_f__mutmut_1: not checked\n"]
    assert scores(lines, [f"{RULES}.*"]) == {"vertex_retrain/rules": Score(1, 1)}
    assert _run(lines, monkeypatch, "--only", "vertex_retrain.rules.*") == 0
    assert _run(lines, monkeypatch) == 2
    assert _run(lines, monkeypatch, "--only", "vertex_retrain.other.*") == 2
