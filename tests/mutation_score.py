"""The mutation score of a `mutmut run`, per folder, and whether it reaches the floor.

`make mutants` pipes ``mutmut results --all true`` into ``python -m tests.mutation_score``.
It lives beside the tests it measures, as a helper of the suite (not a test, not shipped):
mutmut's own summary counts "no tests" apart and has no floor, so a run that
lost its tests would look fine. Every mutant counts here: a mutant no selected test reaches
is a survivor.
"""

from __future__ import annotations

import argparse
import fnmatch
import re
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

KILLED = frozenset({"killed", "timeout", "caught by type check"})
"""Verdicts that count as killed: a test failed, hung, or mypy refused the mutant."""

NOT_COUNTED = frozenset({"skipped"})
"""Verdicts left out of the total: mutmut was told not to test these."""

_LINE = re.compile(r"^\s*(?P<key>\S+): (?P<status>[a-z][a-z ]*)$")


@dataclass(frozen=True)
class Score:
    """Killed and total mutants of one folder."""

    killed: int
    total: int

    @property
    def percent(self) -> float:
        """The share killed, 0-100; 100 when there was nothing to kill."""
        return 100.0 * self.killed / self.total if self.total else 100.0


def folder_of(key: str) -> str:
    """The folder of a mutant (``vertex_retrain.specs.cost.x_f__mutmut_1``: vertex_retrain/specs).

    The key is the module, then the mangled function (methods join class and name with ``ǁ``).
    """
    return "/".join(key.split(".")[:-2])


def scores(lines: Iterable[str], only: Iterable[str] = ()) -> dict[str, Score]:
    """Scores per folder from ``mutmut results --all true`` lines.

    Args:
        lines: The lines.
        only: Mutant name patterns (``vertex_retrain.rules.*``, as ``mutmut run`` takes them):
            the other mutants are left out. Empty: every mutant counts.

    Raises:
        ValueError: A mutant was never checked (the run did not finish), or a line is not a
            mutant's verdict.
    """
    patterns = list(only)
    killed: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for line in lines:
        if not line.strip():
            continue
        match = _LINE.match(line.rstrip("\n"))
        if match is None:
            raise ValueError(f"not a mutmut result line: {line.strip()!r}")
        if patterns and not any(fnmatch.fnmatchcase(match["key"], p) for p in patterns):
            continue
        status = match["status"].strip()
        if status == "not checked":
            raise ValueError(f"{match['key']} was not checked: the run did not finish")
        if status in NOT_COUNTED:
            continue
        folder = folder_of(match["key"])
        total[folder] += 1
        killed[folder] += status in KILLED
    return {folder: Score(killed[folder], total[folder]) for folder in sorted(total)}


def overall(by_folder: dict[str, Score]) -> Score:
    """The score of all folders together (mutants, not percentages, are summed)."""
    return Score(
        sum(s.killed for s in by_folder.values()), sum(s.total for s in by_folder.values())
    )


def report(by_folder: dict[str, Score]) -> str:
    """One line per folder and one for all of them: killed/total and the percentage."""
    rows = [*by_folder.items(), ("all", overall(by_folder))]
    return "\n".join(
        f"{folder:<24} {s.killed:>5}/{s.total:<5} {s.percent:6.2f}%" for folder, s in rows
    )


def main(argv: list[str] | None = None) -> int:
    """Prints the scores read from stdin; 1 when the overall score is below ``--min``."""
    parser = argparse.ArgumentParser(prog="python -m tests.mutation_score", description=__doc__)
    parser.add_argument("--min", type=float, default=90.0, help="lowest passing score, percent")
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="PATTERN",
        help="score only the mutants matching this name pattern (repeatable)",
    )
    args = parser.parse_args(argv)
    try:
        by_folder = scores(sys.stdin, args.only)
    except ValueError as error:
        print(f"mutation score: {error}", file=sys.stderr)
        return 2
    if not by_folder:
        print("mutation score: no mutants in the input (run `mutmut run` first)", file=sys.stderr)
        return 2
    print(report(by_folder))
    score = overall(by_folder).percent
    if score < args.min:
        print(f"mutation score {score:.2f}% is below {args.min:g}%", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
