"""Pipeline parameters of a compiled template: typed `--param NAME=VALUE` overrides and checks.

A compiled KFP v2 pipeline declares its parameters under ``root.inputDefinitions.parameters``,
each with a ``parameterType`` (STRING, NUMBER_INTEGER, NUMBER_DOUBLE, BOOLEAN, LIST, STRUCT),
an optional ``defaultValue`` and ``isOptional``. Everything here is pure apart from
:func:`load_pipeline_spec` and :func:`read_template_bytes`, which read one YAML file, and a LIST
or STRUCT value given as ``@FILE``, which reads that file. Templates, the JSON of LIST and STRUCT
values and ``@FILE`` values go through :mod:`vertex_retrain.specs.safe_load` (regular files
only, bounded size, depth and alias expansion).
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from vertex_retrain.invocation import command
from vertex_retrain.specs.safe_load import (
    JOB_FILE_LIMITS,
    Limits,
    LoadError,
    parse_json,
    parse_yaml,
    read_regular_file,
)

__all__ = [
    "PARAMETER_TYPES",
    "ParameterError",
    "TemplateError",
    "check_values",
    "convert_value",
    "load_parameter_definitions",
    "load_pipeline_spec",
    "parameter_definitions",
    "parse_overrides",
    "read_template_bytes",
]

# A compiled template is machine-written and larger than a job file (weekly-retraining: about
# 130 KB, 2,300 values, 15 levels); these bounds leave room for far larger pipelines.
TEMPLATE_LIMITS = Limits(max_bytes=32 << 20, max_depth=64, max_values=2_000_000, max_aliases=10_000)

# What each type accepts on the command line, with a generic example for the error message.
PARAMETER_TYPES: dict[str, tuple[str, str]] = {
    "STRING": ("any text", "hello"),
    "NUMBER_INTEGER": ("an integer", "10"),
    "NUMBER_DOUBLE": ("a finite number", "0.001"),
    "BOOLEAN": ("true or false", "true"),
    "LIST": ("a JSON list", '["a", 1]'),
    "STRUCT": ("a JSON object", '{"key": 1}'),
}

_EXPECTED: dict[str, type[list[Any]] | type[dict[str, Any]]] = {"LIST": list, "STRUCT": dict}
_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBERS = frozenset({"NUMBER_INTEGER", "NUMBER_DOUBLE"})
FILE_PREFIX = "@"
"""A LIST or STRUCT value written ``@PATH`` is read from that JSON or YAML file."""
RANGE_KEY = "range"
"""Key of a numeric parameter's ``[low, high]`` in :func:`parameter_definitions`."""
MAX_EXACT_INTEGER = 2**53
"""Largest integer a double holds exactly; Vertex carries parameter numbers as doubles."""
_INEXACT = "beyond ±2^53, where a double (Vertex's number) loses digits"
# JSON-like decimal literal; float() alone would also take "nan", "1_0" and " 1 ".
_DOUBLE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


class ParameterError(ValueError):
    """One or more parameter values are wrong; ``problems`` holds one message per mistake."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class TemplateError(ValueError):
    """A file is not a compiled KFP pipeline."""


def load_pipeline_spec(template: str | Path | bytes, *, source: str = "") -> dict[str, Any]:
    """Reads a compiled pipeline (the PipelineSpec document of a KFP YAML).

    Args:
        template: Path of a pipeline compiled by ``kfp.compiler.Compiler``, or its content.
        source: Name for error messages when ``template`` is content.

    Returns:
        The first YAML document (kfp may append a platform-config document after it).

    Raises:
        TemplateError: Unreadable, not YAML, or without ``pipelineInfo.name`` and ``root``.
    """
    where = source or (str(template) if not isinstance(template, bytes) else "template")
    try:
        content = template if isinstance(template, bytes) else read_template_bytes(template)
        document = parse_yaml(content, source=where, limits=TEMPLATE_LIMITS, first_only=True)
    except LoadError as error:
        raise TemplateError(f"{where}: cannot read a compiled pipeline: {error}") from None
    info = document.get("pipelineInfo") if isinstance(document, dict) else None
    if (
        not isinstance(document, dict)
        or not isinstance(info, dict)
        or not isinstance(info.get("name"), str)
        or not isinstance(document.get("root"), dict)
    ):
        raise TemplateError(
            f"{where}: not a compiled KFP pipeline (needs pipelineInfo.name and root); "
            f"compile it first ({command('compile')})"
        )
    return document


def read_template_bytes(path: str | Path) -> bytes:
    """Reads a compiled template's bytes: a regular file of at most 32 MiB.

    Raises:
        TemplateError: Missing, unreadable, not a regular file (a FIFO, ``/dev/zero``) or
            too large.
    """
    try:
        return read_regular_file(path, max_bytes=TEMPLATE_LIMITS.max_bytes)
    except LoadError as error:
        raise TemplateError(f"{path}: cannot read a compiled pipeline: {error}") from None


def parameter_definitions(spec: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The parameter definitions of a compiled pipeline spec.

    Args:
        spec: A document from :func:`load_pipeline_spec`.

    Returns:
        ``root.inputDefinitions.parameters``: parameter name -> definition (``parameterType``,
        optionally ``defaultValue`` and ``isOptional``), plus ``range`` (``[low, high]``) for
        a numeric parameter whose name has one
        (:data:`vertex_retrain.pipelines.ranges.PARAMETER_RANGES`), in any pipeline. Empty
        when the pipeline has none.

    Raises:
        TemplateError: The section is not a mapping of mappings.
    """
    definitions = spec["root"].get("inputDefinitions", {}).get("parameters", {})
    if not isinstance(definitions, dict) or not all(
        isinstance(value, dict) for value in definitions.values()
    ):
        raise TemplateError("root.inputDefinitions.parameters is not a mapping of definitions")
    from vertex_retrain.pipelines.ranges import PARAMETER_RANGES

    found = {str(name): dict(value) for name, value in definitions.items()}
    for name, definition in found.items():
        if name in PARAMETER_RANGES and _type_of(name, definition) in _NUMBERS:
            definition[RANGE_KEY] = list(PARAMETER_RANGES[name])
    return found


def load_parameter_definitions(template: str | Path) -> dict[str, dict[str, Any]]:
    """Reads the parameter definitions of a compiled pipeline YAML file.

    Args:
        template: Path of a compiled pipeline.

    Returns:
        See :func:`parameter_definitions`.

    Raises:
        TemplateError: The file is not a compiled pipeline.
    """
    return parameter_definitions(load_pipeline_spec(template))


def convert_value(name: str, text: str, parameter_type: str) -> Any:
    """Converts the command-line text of one parameter to its typed value.

    Args:
        name: Parameter name (for the message only).
        text: The text after ``=``; for LIST and STRUCT, ``@PATH`` reads the value from a
            JSON (``.json``) or YAML file.
        parameter_type: The KFP ``parameterType``.

    Returns:
        str, int, float, bool, list or dict according to ``parameter_type``.

    Raises:
        ParameterError: The text is not a value of that type, or its file cannot be read.
    """
    if parameter_type not in PARAMETER_TYPES:
        raise ParameterError(
            [
                f"parameter {name!r} has unsupported type {parameter_type!r}; "
                f"expected one of {', '.join(PARAMETER_TYPES)}"
            ]
        )
    if parameter_type in ("LIST", "STRUCT") and text.startswith(FILE_PREFIX):
        from vertex_retrain.cli.param_files import value_from_file

        try:
            return value_from_file(text.removeprefix(FILE_PREFIX), _EXPECTED[parameter_type])
        except ValueError as error:
            raise ParameterError([f"parameter {name!r} ({parameter_type}): {error}"]) from None
    try:
        value = _convert(text, parameter_type)
    except (ValueError, RecursionError) as error:
        raise ParameterError([_type_message(name, parameter_type, text, str(error))]) from None
    return value


def _convert(text: str, parameter_type: str) -> Any:
    if parameter_type == "STRING":
        return text
    if parameter_type == "NUMBER_INTEGER":
        if not _INTEGER.fullmatch(text):
            raise ValueError("not an integer")
        if abs(integer := int(text)) > MAX_EXACT_INTEGER:
            # Vertex carries every parameter number as a double: it would arrive rounded.
            raise ValueError(_INEXACT)
        return integer
    if parameter_type == "NUMBER_DOUBLE":
        number = float(text) if _DOUBLE.fullmatch(text) else math.nan
        if not math.isfinite(number):
            raise ValueError("not a finite number")
        return number
    if parameter_type == "BOOLEAN":
        if text.lower() not in ("true", "false"):
            raise ValueError("not true or false")
        return text.lower() == "true"
    value = parse_json(text, source="the JSON", limits=JOB_FILE_LIMITS)
    expected = _EXPECTED[parameter_type]
    if not isinstance(value, expected):
        raise ValueError(f"JSON {type(value).__name__}, not a JSON {expected.__name__}")
    return value


def _type_message(name: str, parameter_type: str, given: object, reason: str) -> str:
    wanted, example = PARAMETER_TYPES[parameter_type]
    return (
        f"parameter {name!r} expects {parameter_type} ({wanted}), got {given!r} ({reason}); "
        f"for example --param {name}={example}"
    )


def parse_overrides(
    pairs: Iterable[str], parameters: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """Parses ``NAME=VALUE`` overrides against a pipeline's parameter definitions.

    Every override is checked before anything is returned, and all mistakes are reported at
    once. Values are typed: JSON for LIST and STRUCT, ``true``/``false`` (any case) for
    BOOLEAN, decimal literals for numbers, the raw text (which may be empty or contain ``=``)
    for STRING.

    Args:
        pairs: The ``--param`` arguments, e.g. ``["epochs=10", "tune=true"]``.
        parameters: Definitions as returned by :func:`load_parameter_definitions`.

    Returns:
        Parameter name -> typed value, for ``PipelineJob(parameter_values=...)``.

    Raises:
        ParameterError: An override has no ``=``, names an unknown parameter (close matches
            are suggested), is given twice, its value does not fit the parameter's type, is
            outside the range of its name, or is a declaration its parser refuses
            (``dataset_declaration``, ``evaluation_declaration``).
    """
    values: dict[str, Any] = {}
    problems: list[str] = []
    for pair in pairs:
        name, separator, text = pair.partition("=")
        name = name.strip()
        if not separator:
            problems.append(f"--param {pair!r}: expected NAME=VALUE, e.g. --param epochs=10")
        elif not name:
            problems.append(f"--param {pair!r}: no parameter name before '='")
        elif name not in parameters:
            problems.append(f"--param {pair!r}: {_unknown_message(name, parameters)}")
        elif name in values:
            problems.append(f"--param {pair!r}: parameter {name!r} is given more than once")
        else:
            try:
                values[name] = convert_value(name, text, _type_of(name, parameters[name]))
                outside = _named_problem(name, values[name], parameters[name])
            except ParameterError as error:
                # A number too large for a double is out of its range too: say the range.
                outside = _range_problem(name, _number(text), parameters[name])
                found = [outside] if outside else error.problems
                problems.extend(f"--param {pair!r}: {problem}" for problem in found)
            else:
                if outside:
                    problems.append(f"--param {pair!r}: {outside}")
    if problems:
        raise ParameterError(problems)
    return values


def required_without_value(
    parameters: Mapping[str, Mapping[str, Any]], values: Mapping[str, Any]
) -> list[str]:
    """The parameters a run must be given that ``values`` does not give, in name order."""
    return sorted(
        name
        for name, spec in parameters.items()
        if "defaultValue" not in spec and not spec.get("isOptional", False) and name not in values
    )


def missing_problem(pipeline: str, names: Sequence[str]) -> str:
    """One line: which parameters a run of ``pipeline`` still needs, and how to give them."""
    return (
        f"{pipeline} needs a value for {len(names)} parameter(s) without a default: "
        f"{', '.join(names)}; pass each with --param NAME=VALUE (--param NAME=@FILE reads a "
        "JSON or YAML value), or give them defaults once with "
        "vertex_retrain.pipelines.configure (README: Bring your own model)"
    )


def check_values(
    values: Mapping[str, Any],
    parameters: Mapping[str, Mapping[str, Any]],
    *,
    require_all: bool = True,
    given_as: str = "--param {name}={example}",
) -> None:
    """Checks already-typed parameter values against a pipeline's definitions.

    The aiplatform SDK checks only parameter names; a value of the wrong type would be
    rejected by Vertex after submission, so it is caught here instead.

    Args:
        values: Parameter name -> value (as given to ``PipelineJob``).
        parameters: Definitions as returned by :func:`load_parameter_definitions`.
        require_all: Also report required parameters (no default) that are missing.
        given_as: How the caller's user gives a value, for that report (``{name}`` and
            ``{example}`` are filled): a flag on the command line, a schedule's field.

    Raises:
        ParameterError: Unknown names, values of the wrong type, numbers outside the range of
            their name, declarations their parser refuses, or missing required values.
    """
    problems: list[str] = []
    for name, value in values.items():
        if name not in parameters:
            problems.append(_unknown_message(name, parameters))
            continue
        parameter_type = _type_of(name, parameters[name])
        if parameter_type not in PARAMETER_TYPES:
            problems.append(f"parameter {name!r} has unsupported type {parameter_type!r}")
        elif not _fits(value, parameter_type):
            problems.append(_type_message(name, parameter_type, value, type(value).__name__))
        elif parameter_type == "NUMBER_INTEGER" and abs(value) > MAX_EXACT_INTEGER:
            problems.append(_type_message(name, parameter_type, value, _INEXACT))
        elif wrong := _named_problem(name, value, parameters[name]):
            problems.append(wrong)
    if require_all:
        for name, spec in parameters.items():
            required = "defaultValue" not in spec and not spec.get("isOptional", False)
            if required and name not in values:
                wanted, example = PARAMETER_TYPES.get(_type_of(name, spec), ("a value", "..."))
                problems.append(
                    f"parameter {name!r} has no default and was not given; "
                    f"pass {wanted}, e.g. {given_as.format(name=name, example=example)}"
                )
    if problems:
        raise ParameterError(problems)


def _fits(value: object, parameter_type: str) -> bool:
    if parameter_type == "STRING":
        return isinstance(value, str)
    if parameter_type == "BOOLEAN":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if parameter_type == "NUMBER_INTEGER":
        # Vertex carries every number as a double: 3.0 is the integer 3 there.
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if parameter_type == "NUMBER_DOUBLE":
        return isinstance(value, int | float) and math.isfinite(value)
    if parameter_type == "LIST":
        return isinstance(value, list | tuple)
    return isinstance(value, dict)


def _number(text: str) -> int | float | None:
    try:
        if _INTEGER.fullmatch(text):
            return int(text)
        return float(text) if _DOUBLE.fullmatch(text) else None
    except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
        return None


def _named_problem(name: str, value: object, definition: Mapping[str, Any]) -> str | None:
    """Why a typed value is wrong for any parameter of this name, or None: a number outside
    its range, or a declaration its parser refuses (:mod:`vertex_retrain.pipelines.declarations`:
    otherwise only the step that reads it would fail, after the steps before it ran)."""
    from vertex_retrain.pipelines.declarations import declaration_problem

    declared = _type_of(name, definition) == "STRUCT" and declaration_problem(name, value)
    return _range_problem(name, value, definition) or declared or None


def _range_problem(name: str, value: object, definition: Mapping[str, Any]) -> str | None:
    """Why a typed number is outside the parameter's declared range, or None."""
    bounds = definition.get(RANGE_KEY)
    if not bounds or isinstance(value, bool) or not isinstance(value, int | float):
        return None
    low, high = bounds
    if low <= value <= high:
        return None
    return (
        f"parameter {name!r} must be from {low} to {high}, got {value} (the range of any "
        "pipeline parameter of this name, vertex_retrain.pipelines.ranges)"
    )


def _type_of(name: str, spec: Mapping[str, Any]) -> str:
    # Old (schema 2.0.0) templates say "type" with INT/DOUBLE/STRING.
    legacy = {"INT": "NUMBER_INTEGER", "DOUBLE": "NUMBER_DOUBLE"}
    raw = spec.get("parameterType") or spec.get("type") or ""
    return legacy.get(str(raw), str(raw))


def _unknown_message(name: str, parameters: Iterable[str]) -> str:
    known = sorted(parameters)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    if close:  # the likely name is enough: a template's 50-odd names would bury it
        matches = " or ".join(repr(match) for match in close)
        return (
            f"unknown parameter {name!r} (did you mean {matches}?); "
            f"`{command('compile PIPELINE')}` lists this pipeline's {len(known)} parameters"
        )
    listing = ", ".join(known) if known else "(none)"
    return f"unknown parameter {name!r}; this pipeline's parameters: {listing}"
