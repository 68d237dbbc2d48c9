"""Whether ``python -m MODULE`` finds MODULE in the code built from a source folder.

A job runs ``python -m <module>`` once the package built from the source is installed (a
Python-package job, or an image whose Dockerfile pip-installs it). A misspelt
``evaluation_module`` would otherwise be found only when the evaluation job starts, after a
training has been paid for; here it is found before any step runs, from the source folder.

The check refuses only what cannot run: MODULE's top-level package is in the source (flat or
``src/`` layout, setuptools' ``package-dir``, or a bare package folder named after it) but
the rest of its path is not there. A top-level name the source does not hold may come from
one of the package's dependencies, so it is a warning. Only the folders on MODULE's path are
listed, at most :data:`_LISTED` entries each, and a ``pyproject.toml`` over
:data:`_PYPROJECT_BYTES` is not read, so a large or planted source costs a few reads."""

from __future__ import annotations

import difflib
import itertools
import os
import tomllib
from pathlib import Path

from vertex_retrain.specs.problems import Problem, error, warning

__all__ = ["module_problems"]

_SHOWN = 8
"""At most this many runnable modules are offered as alternatives."""
_PYPROJECT_BYTES = 1 << 20
"""A larger ``pyproject.toml`` is not read (its ``package-dir`` is taken as empty)."""
_LISTED = 10_000
"""At most this many entries of a folder are read for alternatives (a planted huge folder
costs no more)."""


def _listing(folder: Path) -> list[Path]:
    """The packages and modules directly in `folder` (nothing when it cannot be read)."""
    try:
        with os.scandir(folder) as entries:
            found = [Path(e.path) for e in itertools.islice(entries, _LISTED)]
    except OSError:
        return []
    return sorted(e for e in found if e.suffix == ".py" or e.is_dir())


def _runnable(folder: Path) -> list[str]:
    """The names ``python -m`` can run directly under `folder`: modules, and packages with a
    ``__main__``."""
    entries = _listing(folder)
    names = [e.stem for e in entries if e.suffix == ".py" and e.stem != "__init__"]
    names += [e.name for e in entries if (e / "__main__.py").is_file()]
    return sorted(n for n in names if n.isidentifier() and not n.startswith("__"))


def _nearest(name: str, found: list[str], prefix: str) -> list[str]:
    """The names in `found` closest to `name` (else the first few), each after `prefix`."""
    found = [n for n in found if n.isidentifier()]
    close = difflib.get_close_matches(name, found, n=3, cutoff=0.6)
    return [f"{prefix}{n}" for n in (close or found[:_SHOWN])]


def _package_dir(source: Path) -> dict[str, str]:
    """setuptools' ``[tool.setuptools] package-dir`` of the project (empty when unreadable:
    the build reports a broken ``pyproject.toml`` itself)."""
    path = source / "pyproject.toml"
    try:
        if path.stat().st_size > _PYPROJECT_BYTES:
            return {}
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}
    mapping = document.get("tool", {}).get("setuptools", {}).get("package-dir", {})
    if not isinstance(mapping, dict):
        return {}
    return {str(k): str(v) for k, v in mapping.items() if isinstance(v, str)}


def _layout(source: Path) -> tuple[dict[str, str], list[Path]] | None:
    """A project's ``package-dir`` and the folders its top-level names are found in (the
    mapped root, else none when it names its packages, else the root and ``src/``); None
    for a bare package folder."""
    if not ((source / "pyproject.toml").is_file() or (source / "setup.py").is_file()):
        return None
    mapping = _package_dir(source)
    bases = [source / mapping[""]] if "" in mapping else [] if mapping else [source, source / "src"]
    return mapping, bases


def _tops(source: Path) -> list[str]:
    """The top-level names the build would package from `source` (for alternatives)."""
    layout = _layout(source)
    if layout is None:
        return [source.name]
    mapping, bases = layout
    return sorted({name for name in mapping if name} | {e.stem for b in bases for e in _listing(b)})


def _top(source: Path, top: str) -> Path | None:
    """Where the source keeps top-level package `top` (its folder) or module `top` (its
    file), as the build packages it; None when it does not hold it."""
    layout = _layout(source)
    if layout is None:  # a bare package folder is packaged as the package named after it
        return source if source.name == top else None
    mapping, bases = layout
    if top in mapping:
        return source / mapping[top]
    for base in bases:
        if (base / top).is_dir():
            return base / top
        if (base / f"{top}.py").is_file():
            return base / f"{top}.py"
    return None


def module_problems(source: Path, module: str, field: str) -> list[Problem]:
    """What stops ``python -m module`` in the package built from `source`.

    Args:
        source: The package's source folder (with its ``pyproject.toml``).
        module: The dotted module name a job runs.
        field: The parameter that names it, e.g. ``--param evaluation_module``.

    Returns:
        An error when the name is not a module name or its path is missing from a top-level
        package the source holds; a warning when the top-level name is not in the source.
    """
    parts = module.split(".")
    if not all(part.isidentifier() for part in parts) or module.endswith(".py"):
        name = module.removesuffix(".py") if module.endswith(".py") else "mypackage.task"
        return [
            error(
                field,
                module,
                "python -m takes a dotted module name (identifiers joined by '.', no .py).",
                [name],
                code="module-name",
            )
        ]
    found = _top(source, parts[0])
    if found is None:
        tops = _tops(source)
        return [
            warning(
                field,
                module,
                f"{parts[0]!r} is not a package or module in {source}: it must come from one "
                "of the package's dependencies, or the job fails when it starts.",
                _nearest(parts[0], sorted(set(tops)), ""),
                code="module-not-in-source",
            )
        ]
    if len(parts) == 1:
        if found.is_file() or (found / "__main__.py").is_file():
            return []
        return [_missing(field, module, source, f"{found} has no __main__.py", [])]
    folder = found
    for depth, part in enumerate(parts[1:-1], start=1):
        if not (folder / part).is_dir():
            packages = sorted(e.name for e in _listing(folder) if e.is_dir())
            prefix = ".".join(parts[:depth]) + "."
            return [
                _missing(field, module, source, f"{folder / part} is not a folder",
                         _nearest(part, packages, prefix))
            ]  # fmt: skip
        folder = folder / part
    last = parts[-1]
    if (folder / f"{last}.py").is_file() or (folder / last / "__main__.py").is_file():
        return []
    why = f"neither {folder / last}.py nor {folder / last / '__main__.py'} exists"
    prefix = ".".join(parts[:-1]) + "."
    return [_missing(field, module, source, why, _nearest(last, _runnable(folder), prefix))]


def _missing(field: str, module: str, source: Path, why: str, alternatives: list[str]) -> Problem:
    return error(
        field,
        module,
        f"the package built from {source} has no module {module} ({why}): the job would fail "
        "when it starts.",
        alternatives,
        code="module-missing",
    )
