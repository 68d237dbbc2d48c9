"""Python objects named on the command line: ``package.module:attr`` or ``path/to/file.py:attr``.

A user's repository keeps its pipelines and schedules in its own code. ``module:attr`` imports
an installed (or working-folder) module; ``file.py:attr`` loads one file by its path, which
needs no package around it (``examples/`` folders have no ``__init__.py``). Loading the same
file twice in one process gives the same module object.

Every failure is a :class:`PythonReferenceError` (a ``ValueError``) with a one-line message
naming the reference and what would work.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "PythonReference",
    "PythonReferenceError",
    "load_attribute",
    "load_module",
    "names_of",
    "parse_python_reference",
]

_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


class PythonReferenceError(ValueError):
    """A ``module:attr`` or ``file.py:attr`` reference that names nothing usable."""


@dataclass(frozen=True)
class PythonReference:
    """A parsed reference: a module name or a ``.py`` file, and a (dotted) attribute."""

    module: str
    """``package.module``, or the path of a ``.py`` file as written."""
    attribute: str
    is_file: bool

    def path(self, base: Path | None = None) -> Path:
        """The file, relative paths taken from ``base`` (default: the working folder)."""
        path = Path(self.module)
        return path if path.is_absolute() or base is None else base / path


def parse_python_reference(text: str) -> PythonReference | None:
    """Parses ``module:attr`` or ``file.py:attr``; None when ``text`` is neither.

    Args:
        text: The reference as given.

    Returns:
        The parsed reference, or None when there is no ``:`` or the part after the last one
        is not a dotted name (a URL, a Windows drive, a file name).

    Raises:
        PythonReferenceError: A ``module:attr`` whose module is not a dotted name.
    """
    left, separator, attribute = text.rpartition(":")
    if not separator or not left or not _DOTTED.fullmatch(attribute) or "://" in text:
        return None
    if left.endswith(".py"):
        return PythonReference(left, attribute, True)
    if not _DOTTED.fullmatch(left):
        raise PythonReferenceError(
            f"{text!r}: {left!r} is neither a module name (package.module) nor a .py file; "
            "pass MODULE:ATTR or path/to/file.py:ATTR"
        )
    return PythonReference(left, attribute, False)


def _module_name(path: Path) -> str:
    # One name per file, so a second load reuses the module; never a name a user imports.
    digest = hashlib.sha256(str(path).encode("utf-8")).hexdigest()[:12]
    stem = re.sub(r"\W", "_", path.stem)
    return f"_vertex_retrain_user_{stem}_{digest}"


def _load_file(path: Path, shown: str) -> Any:
    if path.suffix != ".py" or not path.is_file():
        raise PythonReferenceError(f"{shown!r}: no Python file at {path}")
    resolved = path.resolve()
    name = _module_name(resolved)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise PythonReferenceError(f"{shown!r}: {path} cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs: dataclasses and KFP's source inspection look it up by name.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # the user's code: report it in one line, keep nothing half-made
        del sys.modules[name]
        summary = " ".join(str(error).split())
        raise PythonReferenceError(
            f"{shown!r}: loading {path} failed: {type(error).__name__}: {summary}"
        ) from None
    return module


def _import_module(name: str, shown: str) -> Any:
    # A console script does not search the working folder; `python -m` and users expect it to.
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name and name.startswith(error.name):
            raise PythonReferenceError(
                f"{shown!r}: no module named {error.name!r} (installed, or in the working "
                "folder); or name a file: path/to/file.py:ATTR"
            ) from None
        raise PythonReferenceError(f"{shown!r}: importing {name} failed: {error}") from None
    except Exception as error:
        summary = " ".join(str(error).split())
        raise PythonReferenceError(
            f"{shown!r}: importing {name} failed: {type(error).__name__}: {summary}"
        ) from None


def load_module(reference: PythonReference, *, shown: str, base: Path | None = None) -> Any:
    """Imports the reference's module, or loads its file (relative to ``base``).

    Raises:
        PythonReferenceError: It cannot be loaded (the message carries the cause).
    """
    if reference.is_file:
        return _load_file(reference.path(base), shown)
    return _import_module(reference.module, shown)


def names_of(module: Any, accept: Callable[[Any], bool]) -> list[str]:
    """The public names of ``module`` whose value ``accept`` takes, sorted."""
    return sorted(
        name
        for name, item in vars(module).items()
        if not name.startswith("_") and _accepts(accept, item)
    )


def load_attribute(
    reference: PythonReference,
    *,
    shown: str,
    what: str,
    accept: Callable[[Any], bool],
    base: Path | None = None,
) -> Any:
    """Imports the module or file and returns the attribute, when it is what is wanted.

    Args:
        reference: From :func:`parse_python_reference`.
        shown: The reference as the user wrote it (for messages).
        what: What the attribute must be, for messages (``"pipeline"``).
        accept: Whether an object is such a thing.
        base: Folder that relative file paths start from (default: the working folder).

    Returns:
        The attribute.

    Raises:
        PythonReferenceError: The module or file cannot be loaded, has no such attribute
            (the message lists those that are ``what``), or the attribute is something else.
    """
    module = load_module(reference, shown=shown, base=base)
    value: Any = module
    for part in reference.attribute.split("."):
        if not hasattr(value, part):
            listing = ", ".join(names_of(module, accept)) or "none"
            raise PythonReferenceError(
                f"{shown!r}: {reference.module} has no attribute {reference.attribute!r}; "
                f"its {what}s: {listing}"
            )
        value = getattr(value, part)
    if not _accepts(accept, value):
        raise PythonReferenceError(
            f"{shown!r}: {reference.attribute} is a {type(value).__name__}, not a {what}"
        )
    return value


def _accepts(accept: Callable[[Any], bool], item: Any) -> bool:
    try:
        return bool(accept(item))
    except Exception:  # an odd object in a user's module is simply not a match
        return False
