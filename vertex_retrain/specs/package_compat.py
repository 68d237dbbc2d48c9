"""Whether a training package installs on its executor image: one checker for both backends.

The ``preflight`` command runs it on every Python-package pool before a submission, and the
local backend runs it when it installs a package for a pool, so a package that cannot install
on Vertex fails locally with the same message. Facts about the images come from the container
catalog (:mod:`vertex_retrain.specs.containers`); nothing here reads files or the network.

What pip on the replica would do, given the image's Python and framework:

- ``Requires-Python`` that excludes the image's Python: pip refuses the package (error);
- a requirement on the image's framework that excludes the image's version: pip replaces the
  framework with a PyPI build (gigabytes, another CUDA build), or finds none (error);
- a pinned requirement whose pinned release needs another Python: pip finds no match (error).
  The pinned release's ``Requires-Python`` is known only when that release is installed here;
  otherwise nothing is claimed;
- a requirement that excludes the version of a package the image ships: pip replaces it
  (warning).
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vertex_retrain.specs.containers import ContainerCatalog, PrebuiltImage, load_containers
from vertex_retrain.specs.executor_images import (
    COMPATIBILITY_UNKNOWN,
    available_training_images,
    described_image,
    executor_image_problems,
    training_image,
)
from vertex_retrain.specs.problems import Problem, error, warning

if TYPE_CHECKING:
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet

__all__ = [
    "COMPATIBILITY_UNKNOWN",
    "PackageMetadata",
    "RequiresPythonLookup",
    "executor_image_problems",
    "installed_requires_python",
    "package_problems",
]

RequiresPythonLookup = Callable[[str, str], "str | None"]
"""``(distribution, version) -> its Requires-Python ('' when it declares none)``, or None when
unknown."""

_PATCHES = range(0, 60)
"""Patch releases tried when asking whether a specifier admits the image's ``major.minor``
(the image carries "the latest patch", which no source names)."""


@dataclass(frozen=True)
class PackageMetadata:
    """The installation-relevant part of a package's metadata.

    Attributes:
        name: Distribution name.
        version: Version.
        requires_python: The ``Requires-Python`` specifier, or None when it declares none.
        requires_dist: ``Requires-Dist`` lines (PEP 508), extras included with their markers.
        origin: Where it was read (file or folder), for messages.
    """

    name: str
    version: str
    requires_python: str | None
    requires_dist: tuple[str, ...]
    origin: str

    @property
    def label(self) -> str:
        """``name version`` for messages."""
        return f"{self.name} {self.version}".strip() or self.origin


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_requires_python(name: str, version: str) -> str | None:
    """The ``Requires-Python`` of ``name==version`` when exactly that release is installed here.

    Returns:
        The specifier (``''`` when it declares none), or None when another release or none is
        installed (then nothing is known offline).
    """
    from packaging.version import InvalidVersion, Version

    try:
        found = importlib.metadata.distribution(name)
        if Version(found.version).public != Version(version).public:
            return None
    except (importlib.metadata.PackageNotFoundError, InvalidVersion):
        return None
    declared = found.metadata.get_all("Requires-Python") or [""]
    return str(declared[0] or "")


def _admits_minor(specifier: SpecifierSet, minor: str) -> bool:
    return any(specifier.contains(f"{minor}.{patch}", prereleases=True) for patch in _PATCHES)


def _pin(requirement: Requirement) -> str | None:
    for spec in requirement.specifier:
        if spec.operator in ("==", "===") and "*" not in spec.version:
            return str(spec.version)
    return None


def package_problems(
    package: PackageMetadata,
    executor_image_uri: str,
    field: str,
    *,
    catalog: ContainerCatalog | None = None,
    requires_python_of: RequiresPythonLookup = installed_requires_python,
    today: dt.date | None = None,
) -> list[Problem]:
    """Checks that pip can install ``package`` on the executor image without replacing it.

    An image outside the catalog is checked against what its tag says (Google's convention:
    ``pytorch-gpu.1-13.py38`` is torch 1.13 on Python 3.8).

    Args:
        package: The package's metadata (``vertex_retrain.build.package_metadata``).
        executor_image_uri: The pool's ``executorImageUri``.
        field: Field path of the package (e.g. ``...pythonPackageSpec.packageUris[0]``).
        catalog: The container catalog (default: the shipped one).
        requires_python_of: Finds a pinned release's ``Requires-Python`` (default: from the
            releases installed here; tests pass a table).
        today: The date availability is judged on (default: today); only images available
            then are recommended.

    Returns:
        The problems; none when neither the catalog nor the tag says the image's Python
        (the image check says so).
    """
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    catalog = catalog or load_containers()
    image = training_image(executor_image_uri, catalog)
    if image is None:
        return []
    where = described_image(image, catalog)
    if image.python is None:
        return [
            warning(
                field,
                package.label,
                f"The catalog does not know the Python of {where}, so {package.label}'s "
                "Requires-Python and pins are not checked.",
                code="package-python-unknown",
            )
        ]
    problems: list[Problem] = []
    available = available_training_images(
        catalog, framework=image.framework, today=today or dt.date.today()
    )
    others = [i for i in available if i.python]
    if package.requires_python:
        try:
            allowed = SpecifierSet(package.requires_python)
        except InvalidSpecifier:
            allowed = None
        if allowed is not None and not allowed.contains(f"{image.python}.0", prereleases=True):
            fitting = [i.name for i in others if allowed.contains(f"{i.python}.0")]
            problems.append(
                error(
                    field,
                    package.label,
                    f"{package.label} requires Python {package.requires_python}, but "
                    f"{where} runs Python {image.python}: pip on the replica refuses to "
                    "install it.",
                    [
                        f'requires-python = ">={image.python}" if the code runs on '
                        f"Python {image.python}",
                        *(f"executor image {name}" for name in fitting[:2]),
                        "a custom container (containerSpec) with a newer Python",
                    ],
                    code="package-python",
                )
            )
    environment = {
        "python_version": image.python,
        "python_full_version": f"{image.python}.0",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "platform_machine": "x86_64",
        "os_name": "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "extra": "",
    }
    for line in package.requires_dist:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            problems.append(
                error(field, line, "Not a valid requirement (PEP 508).", code="package-requirement")
            )
            continue
        if requirement.marker is not None and not requirement.marker.evaluate(environment):
            continue
        problems += _requirement_problems(
            requirement, package, image, where, field, requires_python_of
        )
    return problems


def _requirement_problems(
    requirement: Requirement,
    package: PackageMetadata,
    image: PrebuiltImage,
    where: str,
    field: str,
    requires_python_of: RequiresPythonLookup,
) -> list[Problem]:
    from packaging.specifiers import SpecifierSet

    name = _canonical(requirement.name)
    specifier = requirement.specifier
    text = str(requirement)
    if name == _canonical(image.framework):
        if specifier and not _admits_minor(specifier, image.version):
            return [
                error(
                    field,
                    text,
                    f"{package.label} requires {text}, but {where} provides "
                    f"{image.framework} {image.version} (built for its CUDA): pip would replace "
                    "it with a PyPI build (gigabytes, another CUDA) or find no match.",
                    [
                        f"leave {image.framework} out of the package's dependencies (the image "
                        "provides it)",
                        f"{image.framework}>={image.version} if a minimum is needed",
                        f"an executor image with {image.framework} matching {specifier}",
                    ],
                    code="package-framework",
                )
            ]
        return []
    problems: list[Problem] = []
    pinned = _pin(requirement)
    if pinned is not None:
        needs = requires_python_of(requirement.name, pinned)
        if needs and not SpecifierSet(needs).contains(f"{image.python}.0", prereleases=True):
            problems.append(
                error(
                    field,
                    text,
                    f"{package.label} pins {text}, which requires Python {needs}; {where} "
                    f"runs Python {image.python}, so pip finds no matching distribution.",
                    [
                        f"a range that fits Python {image.python}, e.g. "
                        f"{requirement.name}>=LOWER,<{pinned}",
                        "no pin, if the image already provides it",
                    ],
                    code="package-pin-python",
                )
            )
    shipped = {_canonical(k): v for k, v in image.includes.items()}.get(name)
    if shipped and specifier and not specifier.contains(shipped, prereleases=True):
        problems.append(
            warning(
                field,
                text,
                f"{where} ships {requirement.name} {shipped}; {text} makes pip replace it "
                "on every replica start.",
                [f"a range that admits {shipped}", "leave it out (the image provides it)"],
                code="package-replaces",
            )
        )
    return problems
