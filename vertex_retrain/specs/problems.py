"""Problems found in a job spec, the error that carries them, and the warning category.

Validation never raises on its own: it returns a list of :class:`Problem`. Builders turn the
errors into one :class:`JobSpecError` and emit the warnings as :class:`JobSpecWarning`, so a
caller sees every problem at once instead of fixing them one submission at a time.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Problem:
    """One thing wrong (error) or risky (warning) in a job payload.

    Attributes:
        severity: ``"error"`` (Vertex would reject it or it cannot work) or ``"warning"``.
        field: Path of the offending field in the payload, camelCase, e.g.
            ``jobSpec.workerPoolSpecs[0].machineSpec.acceleratorCount``.
        value: The value found there (JSON-compatible), or None when the field is missing.
        message: Why it is impossible or risky.
        alternatives: Concrete valid alternatives, e.g. ``["acceleratorCount 2", ...]``.
        code: Stable short identifier of the rule, e.g. ``"gpu-count"``.
    """

    severity: Severity
    field: str
    value: Any
    message: str
    alternatives: tuple[str, ...] = ()
    code: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Returns the JSON form used by ``vertex-retrain validate --json``."""
        return {
            "severity": self.severity,
            "field": self.field,
            "value": self.value,
            "message": self.message,
            "alternatives": list(self.alternatives),
            "code": self.code,
        }

    def describe(self, *, show_field: bool = True) -> str:
        """Returns one human-readable line: field, value, reason and alternatives.

        Args:
            show_field: False leaves out ``field = value:`` (a message that names its subject).
        """
        where = f"{self.field} = {_show(self.value)}: " if show_field else ""
        text = f"{self.severity}: {where}{self.message}"
        if self.alternatives:
            text += " Valid alternatives: " + "; ".join(self.alternatives) + "."
        return text


def _show(value: Any) -> str:
    if value is None:
        return "(missing)"
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def join_choices(items: Sequence[object]) -> str:
    """Joins choices for a message: ``1, 2 or 4``."""
    words = [str(item) for item in items]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def error(
    field_path: str, value: Any, message: str, alternatives: Iterable[str] = (), code: str = ""
) -> Problem:
    """Builds an error :class:`Problem`."""
    return Problem("error", field_path, value, message, tuple(alternatives), code)


def warning(
    field_path: str, value: Any, message: str, alternatives: Iterable[str] = (), code: str = ""
) -> Problem:
    """Builds a warning :class:`Problem`."""
    return Problem("warning", field_path, value, message, tuple(alternatives), code)


def errors_of(problems: Iterable[Problem]) -> list[Problem]:
    """Returns only the errors."""
    return [p for p in problems if p.severity == "error"]


def warnings_of(problems: Iterable[Problem]) -> list[Problem]:
    """Returns only the warnings."""
    return [p for p in problems if p.severity == "warning"]


class JobSpecWarning(UserWarning):
    """A soft pitfall in a job spec (e.g. Spot without a checkpoint directory)."""


class JobSpecError(ValueError):
    """A job spec that Vertex would reject or that cannot work; lists every error.

    ``str(exc)`` names, for every error, the field, the value, the reason and the valid
    alternatives.

    Attributes:
        problems: All problems found (errors and warnings); ``errors`` / ``warnings`` split
            them.
    """

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__(self.__str__())

    @property
    def errors(self) -> list[Problem]:
        """The errors that made the spec invalid."""
        return errors_of(self.problems)

    @property
    def warnings(self) -> list[Problem]:
        """The warnings found alongside the errors."""
        return warnings_of(self.problems)

    def __str__(self) -> str:
        errs = self.errors
        lines = [f"invalid job spec: {len(errs)} error(s)"]
        lines += ["  - " + p.describe() for p in errs]
        return "\n".join(lines)


def raise_or_warn(problems: Sequence[Problem], *, stacklevel: int = 3) -> None:
    """Raises :class:`JobSpecError` if any error is present, else warns for each warning.

    Args:
        problems: Result of a validation.
        stacklevel: Passed to :func:`warnings.warn` so the warning points at the caller.

    Raises:
        JobSpecError: When at least one problem is an error.
    """
    if errors_of(problems):
        raise JobSpecError(tuple(problems))
    for problem in warnings_of(problems):
        warnings.warn(problem.describe(), JobSpecWarning, stacklevel=stacklevel)
