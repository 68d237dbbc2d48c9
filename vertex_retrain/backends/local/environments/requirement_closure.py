"""The installed distributions a package needs: its requirements' closure, found here.

A local job's environment holds its package, the closure of the package's requirements and
what the executor image provides (`python_env`). This module works that closure out against
the distributions installed in some folders (by default this process's `sys.path`, the
caller's environment): each requirement's marker is evaluated with the extras asked for, an
installed distribution whose version satisfies it is taken, and that distribution's own
requirements follow, with the extras the requirement named. A requirement that no installed
version satisfies is reported, for pip to install from the package index.

Only distributions installed with a `RECORD` (pip, uv, installer: `*.dist-info` folders) can
be taken: their files are known, so they can be linked into a job's environment one by one
(`dist_view`). Legacy `*.egg-info` installs count as not installed.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import sys
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from vertex_retrain.specs.package_compat import PackageMetadata

if TYPE_CHECKING:
    from packaging.requirements import Requirement

_NO_EXTRA = ""


def canonical_name(name: str) -> str:
    """PEP 503 normalisation: `Foo_Bar.baz` -> `foo-bar-baz`."""
    from packaging.utils import canonicalize_name

    return str(canonicalize_name(name))


@dataclass(frozen=True)
class Installed:
    """One installed distribution.

    Attributes:
        name: Canonical name (`google-cloud-storage`).
        version: Its version, as the metadata folder's name gives it.
        metadata_dir: The `*.dist-info` folder (or `*.egg-info`).
        site: The folder its `RECORD` paths are relative to (its site-packages).
    """

    name: str
    version: str
    metadata_dir: Path
    site: Path

    @property
    def linkable(self) -> bool:
        """Whether its files are listed (a `*.dist-info` folder with a `RECORD`)."""
        return self.metadata_dir.suffix == ".dist-info" and (self.metadata_dir / "RECORD").is_file()

    @property
    def label(self) -> str:
        """`name version`, for messages."""
        return f"{self.name} {self.version}"

    def requires(self) -> list[str]:
        """Its `Requires-Dist` lines (markers and extras included)."""
        distribution = importlib.metadata.PathDistribution(self.metadata_dir)
        return list(distribution.requires or [])

    def files(self) -> tuple[tuple[str, ...], ...]:
        """Its files inside `site`, as path parts (`RECORD` entries outside it are left out)."""
        record = self.metadata_dir / "RECORD"
        try:
            stamp = record.stat().st_mtime_ns
        except OSError:
            return ()
        return _record_files(self.metadata_dir, stamp)


@functools.lru_cache(maxsize=4096)
def _record_files(metadata_dir: Path, stamp: int) -> tuple[tuple[str, ...], ...]:
    # Keyed by the RECORD's mtime too: a reinstall in place is read again. torch's RECORD
    # alone has thousands of lines, and every environment built in a process reads it.
    distribution = importlib.metadata.PathDistribution(metadata_dir)
    out = []
    for entry in distribution.files or []:
        path = PurePosixPath(str(entry))
        if path.parts and path.parts[0] != ".." and not path.is_absolute():
            out.append(path.parts)
    return tuple(out)


def _from_folder_name(folder: str) -> tuple[str, str]:
    stem = folder.rsplit(".", 1)[0]
    name, _, version = stem.partition("-")
    # egg-info names may carry a Python tag: `name-1.0-py3.11.egg-info`.
    return canonical_name(name), version.split("-py", 1)[0]


class InstalledDistributions:
    """The distributions installed in some folders; the first folder holding a name wins.

    Args:
        paths: Folders to look in, in import order; defaults to this process's `sys.path`.
    """

    def __init__(self, paths: Sequence[str | os.PathLike[str]] | None = None) -> None:
        self._first: dict[str, Installed] = {}
        self._by_site: dict[Path, list[Installed]] = {}
        for entry in sys.path if paths is None else paths:
            site = Path(entry or ".").resolve()
            if site in self._by_site or not site.is_dir():
                continue
            found = []
            for child in sorted(os.scandir(site), key=lambda e: e.name):
                if child.name.endswith((".dist-info", ".egg-info")) and child.is_dir():
                    name, version = _from_folder_name(child.name)
                    found.append(Installed(name, version, Path(child.path), site))
            self._by_site[site] = found
            for installed in found:
                self._first.setdefault(installed.name, installed)

    def get(self, name: str) -> Installed | None:
        """The distribution imports would find under this (any spelling of the) name."""
        return self._first.get(canonical_name(name))

    def in_site(self, site: Path) -> list[Installed]:
        """Every distribution whose metadata sits in `site` (shadowed ones included)."""
        return list(self._by_site.get(site, ()))


@dataclass(frozen=True)
class Unsatisfied:
    """A requirement that no installed distribution satisfies.

    Attributes:
        requirement: The requirement without its marker (`tinydep[fast]>=2`), for pip.
        needed_by: Who asked (`tinypkg 0.1.0`).
        installed: The installed version that does not satisfy it, or None.
    """

    requirement: str
    needed_by: str
    installed: str | None

    def describe(self) -> str:
        """One line: the requirement, who needs it and what is installed."""
        name = self.requirement
        have = f"installed here: {self.installed}" if self.installed else "not installed here"
        return f"{name} (needed by {self.needed_by}; {have})"


@dataclass(frozen=True)
class Closure:
    """What an environment must hold besides the packages themselves.

    Attributes:
        linked: Installed distributions that satisfy the requirements, by name.
        unsatisfied: Requirements no installed version satisfies.
        extras: Extras in force per distribution (the packages' own included).
    """

    linked: dict[str, Installed]
    unsatisfied: tuple[Unsatisfied, ...]
    extras: Mapping[str, frozenset[str]] = field(default_factory=dict)


def _applies(requirement: Requirement, extras: Iterable[str]) -> bool:
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({"extra": extra}) for extra in extras)


def _satisfies(requirement: Requirement, version: str) -> bool:
    from packaging.version import InvalidVersion, Version

    if not requirement.specifier:
        return True
    try:
        return requirement.specifier.contains(Version(version), prereleases=True)
    except InvalidVersion:
        return False


def resolve_closure(
    packages: Sequence[PackageMetadata],
    installed: InstalledDistributions,
    *,
    extras: Iterable[str] = (),
    provided: Mapping[str, str] | None = None,
) -> Closure:
    """Works out the installed distributions the packages need, and what is missing.

    Args:
        packages: The packages the environment is for (never taken from `installed`).
        installed: Where to look for the requirements.
        extras: Extras of the packages to include (`serve`).
        provided: Distribution name -> who provides it (`the executor image ...`): taken
            with their closure when installed, left out silently when not.

    Returns:
        The linked distributions, the unsatisfied requirements and the extras in force.
    """
    from packaging.requirements import InvalidRequirement, Requirement

    own = {canonical_name(p.name): p for p in packages}
    in_force: dict[str, set[str]] = {}
    linked: dict[str, Installed] = {}
    unsatisfied: dict[str, Unsatisfied] = {}
    queue: deque[tuple[str, frozenset[str], str, bool]] = deque()

    def expand(name: str, lines: Iterable[str], new: Iterable[str], who: str) -> None:
        added = frozenset(new) - in_force.setdefault(name, set())
        if not added:
            return
        in_force[name] |= added
        queue.extend((line, added, who, False) for line in lines)

    for package in packages:
        expand(canonical_name(package.name), package.requires_dist, {_NO_EXTRA, *extras},
               package.label)  # fmt: skip
    for name, who in (provided or {}).items():
        queue.append((name, frozenset({_NO_EXTRA}), who, True))
    while queue:
        line, context, who, optional = queue.popleft()
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            unsatisfied.setdefault(line, Unsatisfied(line, who, None))
            continue
        if not _applies(requirement, context):
            continue
        name = canonical_name(requirement.name)
        if name in own:
            expand(name, own[name].requires_dist, requirement.extras, own[name].label)
            continue
        found = installed.get(name)
        if found is None and optional:
            continue
        if found is None or not found.linkable or not _satisfies(requirement, found.version):
            requirement.marker = None  # evaluated already; pip must not evaluate it again
            text = str(requirement)
            have = found.version if found is not None and found.linkable else None
            unsatisfied.setdefault(text, Unsatisfied(text, who, have))
            continue
        linked.setdefault(name, found)
        expand(name, found.requires(), {_NO_EXTRA, *requirement.extras}, found.label)
    return Closure(
        linked=dict(sorted(linked.items())),
        unsatisfied=tuple(unsatisfied[key] for key in sorted(unsatisfied)),
        extras={name: frozenset(e - {_NO_EXTRA}) for name, e in in_force.items()},
    )
