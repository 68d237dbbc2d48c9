"""One loader for every YAML or JSON document a user hands the library.

`vertex-retrain validate` job files, compiled templates given to `run`/`upload`, and the JSON of
`--param NAME=VALUE` all come through here. Plain `yaml.safe_load` and `json.loads` are safe
from code execution but not from these:

- an alias bomb (nine aliases of nine aliases...) loads as a small shared structure, and the
  first walk over it (camelCase conversion, validation, `json.dumps`) expands it past memory;
- `a: &a [*a]` loads as a list that contains itself: every walk recurses until
  `RecursionError`;
- JSON or YAML nested a thousand levels deep raises `RecursionError` in the parser;
- YAML 1.1 turns `2024-01-01` into a `date`, `!!binary` into bytes and `on:` into the key
  `True`, none of which JSON (Vertex's REST form, `--json` output) can carry;
- `/dev/zero` is read until memory runs out, and opening a FIFO blocks until a writer comes.

So a file is read only when `os.stat` and then `os.fstat` of the descriptor (opened with
`O_NONBLOCK`) say it is a regular file, and at most `Limits.max_bytes` of it. YAML is parsed
with a loader that builds only JSON types (dates stay strings; other tags are refused), and
every document is then walked once, without recursion, against `Limits`: depth, number of
values with aliases counted each time they are used, number of alias uses, a value that
contains itself, keys that are not strings, and numbers that are not finite. Every refusal
is a :class:`LoadError` (a `ValueError`) of one line naming the source and the path inside
it. The result is plain, acyclic JSON data: dicts with string keys, lists, str, int, float,
bool and None.
"""

from __future__ import annotations

import json
import math
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

__all__ = ["JOB_FILE_LIMITS", "Limits", "LoadError", "load_file", "parse_json", "parse_yaml"]


@dataclass(frozen=True)
class Limits:
    """Bounds on one document.

    Attributes:
        max_bytes: Largest file or text accepted.
        max_depth: Deepest nesting of lists and mappings (the top level is 1).
        max_values: Most values in the document once every alias is expanded.
        max_aliases: Most uses of an alias (of a list or mapping).
    """

    max_bytes: int = 1 << 20
    max_depth: int = 64
    max_values: int = 100_000
    max_aliases: int = 100


JOB_FILE_LIMITS = Limits()
"""Hand-written job files and `--param` values: 1 MiB, depth 64, 100,000 values."""


class LoadError(ValueError):
    """A document was refused: unreadable, too large or deep, self-referencing, or not JSON.

    Attributes:
        alternative: What to do instead, for a refusal of the loader's own bounds (empty for
            a syntax error, whose fix is at the reported line).
    """

    def __init__(self, message: str, *, alternative: str = "") -> None:
        super().__init__(message)
        self.alternative = alternative


_FLATTEN = "flatten the nesting"
_NO_ALIASES = "write the values out instead of using YAML anchors and aliases (& and *)"


def _regular_file(max_bytes: int) -> str:
    return f"pass a regular JSON or YAML file of at most {max_bytes} bytes"


class _JsonTypesLoader(yaml.SafeLoader):
    """SafeLoader that builds JSON types only: no dates, bytes, sets or ordered pairs."""


_JSON_TAGS = {
    f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "str", "seq", "map")
}
_JsonTypesLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_JsonTypesLoader.yaml_constructors = {
    tag: constructor
    for tag, constructor in yaml.SafeLoader.yaml_constructors.items()
    if tag in _JSON_TAGS or tag is None  # None: refuses any other tag
}


def _too_deep(source: str, limits: Limits) -> LoadError:
    return LoadError(
        f"{source}: nested more than {limits.max_depth} levels deep", alternative=_FLATTEN
    )


def _reject_constant(constant: str) -> Any:
    raise ValueError(f"{constant} is not allowed (it is not JSON)")


def parse_json(text: str | bytes, *, source: str, limits: Limits = JOB_FILE_LIMITS) -> Any:
    """Parses a JSON document within `limits`.

    Args:
        text: The document.
        source: What it is, for messages (a file name, `--param epochs`).
        limits: Bounds (default: `JOB_FILE_LIMITS`).

    Returns:
        Plain JSON data (see the module docstring).

    Raises:
        LoadError: Too large, not JSON (`NaN` and `Infinity` included), or beyond `limits`.
    """
    if len(text) > limits.max_bytes:
        raise LoadError(
            f"{source}: larger than {limits.max_bytes} bytes",
            alternative=f"keep it under {limits.max_bytes} bytes",
        )
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise _too_deep(source, limits) from None
    except json.JSONDecodeError as exc:
        raise LoadError(
            f"{source} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise LoadError(f"{source} is not valid JSON: {exc}") from None
    check_tree(value, source=source, limits=limits)
    return value


def parse_yaml(
    text: str | bytes, *, source: str, limits: Limits = JOB_FILE_LIMITS, first_only: bool = False
) -> Any:
    """Parses a YAML document into JSON types within `limits`.

    Args:
        text: The document.
        source: What it is, for messages.
        limits: Bounds (default: `JOB_FILE_LIMITS`).
        first_only: Read the first document of a stream and ignore the rest (compiled KFP
            templates append a platform document); otherwise a second document is an error.

    Returns:
        Plain JSON data; a date such as `2024-01-01` stays the string it was written as.

    Raises:
        LoadError: Too large, not YAML, a tag outside JSON's types, or beyond `limits`.
    """
    if len(text) > limits.max_bytes:
        raise LoadError(
            f"{source}: larger than {limits.max_bytes} bytes",
            alternative=f"keep it under {limits.max_bytes} bytes",
        )
    loader: _JsonTypesLoader | None = None
    try:
        # The reader refuses a NUL or control character as it is built: inside the try.
        loader = _JsonTypesLoader(text)
        if first_only:
            node = loader.get_node() if loader.check_node() else None
        else:
            node = loader.get_single_node()
        value = None if node is None else loader.construct_document(node)
    except RecursionError:
        raise _too_deep(source, limits) from None
    except yaml.YAMLError as exc:
        summary = " ".join(str(exc).split())
        raise LoadError(f"{source} is not valid YAML: {summary}") from None
    finally:
        if loader is not None:
            loader.dispose()
    check_tree(value, source=source, limits=limits)
    return value


def _join(path: str, key: object) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def check_tree(value: Any, *, source: str, limits: Limits = JOB_FILE_LIMITS) -> None:
    """Walks loaded data once, without recursion, and refuses what breaks `limits`.

    Args:
        value: Data from a JSON or YAML parser (lists may be shared or contain themselves).
        source: What it is, for messages.
        limits: Bounds.

    Raises:
        LoadError: Naming the first path that breaks a bound, holds a non-string key, a
            non-finite number or a value of a type JSON cannot carry.
    """
    exit_marker = object()
    on_path: set[int] = set()
    seen: set[int] = set()
    values = aliases = 0
    pending: list[tuple[Any, str, int]] = [(value, "", 1)]
    while pending:
        item, path, depth = pending.pop()
        if item is exit_marker:
            on_path.discard(depth)
            continue
        values += 1
        if values > limits.max_values:
            raise LoadError(
                f"{source}: holds more than {limits.max_values} values once its aliases are "
                "expanded (an alias bomb?)",
                alternative=_NO_ALIASES,
            )
        where = path or "(top level)"
        if isinstance(item, dict | list):
            if depth > limits.max_depth:
                raise LoadError(
                    f"{source}: {where} is nested more than {limits.max_depth} deep",
                    alternative=_FLATTEN,
                )
            identity = id(item)
            if identity in on_path:
                raise LoadError(
                    f"{source}: {where} contains itself (an alias inside its anchor)",
                    alternative=_NO_ALIASES,
                )
            if identity in seen:
                aliases += 1
                if aliases > limits.max_aliases:
                    raise LoadError(
                        f"{source}: uses aliases more than {limits.max_aliases} times",
                        alternative=_NO_ALIASES,
                    )
            seen.add(identity)
            on_path.add(identity)
            pending.append((exit_marker, "", identity))  # leaves the path after children
            if isinstance(item, dict):
                for key in item:
                    if not isinstance(key, str):
                        raise LoadError(
                            f"{source}: key {key!r} under {where} is not a string; quote it "
                            "(YAML reads on/off/yes/no as booleans and digits as numbers)"
                        )
                children = [(child, _join(path, key), depth + 1) for key, child in item.items()]
            else:
                children = [(child, _join(path, i), depth + 1) for i, child in enumerate(item)]
            pending.extend(reversed(children))
        elif isinstance(item, float) and not math.isfinite(item):
            raise LoadError(f"{source}: {where} is {item}, which JSON cannot carry")
        elif not isinstance(item, str | int | float | bool) and item is not None:
            raise LoadError(f"{source}: {where} is a {type(item).__name__}, not JSON data")


def read_regular_file(path: str | Path, *, max_bytes: int) -> bytes:
    """Reads a regular file of at most `max_bytes`, never blocking and never reading a device.

    Args:
        path: The file (a symlink to a regular file is followed).
        max_bytes: Largest size accepted.

    Returns:
        The file's bytes.

    Raises:
        LoadError: Missing, unreadable, not a regular file (folder, FIFO, device, socket),
            or larger than `max_bytes`.
    """
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise LoadError(
                f"{path} is {_file_kind(info.st_mode)}, not a regular file",
                alternative=_regular_file(max_bytes),
            )
        if info.st_size > max_bytes:
            raise LoadError(
                f"{path} is larger than {max_bytes} bytes", alternative=_regular_file(max_bytes)
            )
        # O_NONBLOCK: if the path was swapped for a FIFO after the stat, open does not wait;
        # O_NOCTTY: nor does a terminal swapped in become our controlling terminal. (No
        # O_CLOEXEC: os.open's descriptors are not inherited already, PEP 446.)
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        with os.fdopen(descriptor, "rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            if not stat.S_ISREG(mode):
                raise LoadError(
                    f"{path} is {_file_kind(mode)}, not a regular file",
                    alternative=_regular_file(max_bytes),
                )
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise LoadError(
            f"cannot read {path}: {exc.strerror or exc}",
            alternative="check the path and its permissions",
        ) from None
    if len(data) > max_bytes:
        raise LoadError(
            f"{path} is larger than {max_bytes} bytes", alternative=_regular_file(max_bytes)
        )
    return data


def _file_kind(mode: int) -> str:
    for test, kind in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return kind
    return "not a regular file"


def load_file(
    path: str | Path, *, limits: Limits = JOB_FILE_LIMITS, first_only: bool = False
) -> Any:
    """Reads a JSON (`.json`) or YAML (anything else) file within `limits`.

    Args:
        path: The file.
        limits: Bounds (default: `JOB_FILE_LIMITS`).
        first_only: For YAML, read only the first document (see :func:`parse_yaml`).

    Returns:
        Plain JSON data.

    Raises:
        LoadError: See :func:`read_regular_file`, :func:`parse_json`, :func:`parse_yaml`;
            also text that is not UTF-8.
    """
    data = read_regular_file(path, max_bytes=limits.max_bytes)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LoadError(f"{path} is not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    source = str(path)
    if Path(path).suffix.lower() == ".json":
        return parse_json(text, source=source, limits=limits)
    return parse_yaml(text, source=source, limits=limits, first_only=first_only)
