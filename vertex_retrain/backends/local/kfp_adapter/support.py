"""The kfp versions the adapter supports, read from this package's own requirement on kfp.

Every module of this room reaches into kfp.local's internals (function names, keyword calls,
placeholder resolution), which kfp changes between minor versions without notice. So the
adapter checks the installed kfp against the range ``vertex-retrain`` declares for it
(pyproject.toml, the one place the range is written) before it patches anything, and a kfp
outside that range stops a local run with one line instead of a traceback deep in kfp.local.
"""

from __future__ import annotations

import importlib.metadata

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

DISTRIBUTION = "vertex-retrain"
"""The distribution whose requirement on kfp is the supported range."""


class UnsupportedKfpError(RuntimeError):
    """The installed kfp is outside the range the local runner supports."""


def supported_kfp() -> SpecifierSet:
    """The kfp versions ``vertex-retrain`` requires (its installed metadata).

    Raises:
        UnsupportedKfpError: ``vertex-retrain`` is not installed or declares no kfp range.
    """
    try:
        requirements = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError as missing:
        raise UnsupportedKfpError(
            f"{DISTRIBUTION} is not installed, so the kfp versions it supports are unknown; "
            f"install it (pip install -e . from the clone)"
        ) from missing
    for line in requirements:
        requirement = Requirement(line)
        if requirement.name == "kfp" and requirement.marker is None:
            return requirement.specifier
    raise UnsupportedKfpError(f"{DISTRIBUTION} declares no requirement on kfp")


def installed_kfp() -> str:
    """The installed kfp's version, ``"none"`` when kfp is not installed."""
    try:
        return importlib.metadata.version("kfp")
    except importlib.metadata.PackageNotFoundError:
        return "none"


def check_kfp_version(installed: str | None = None) -> None:
    """Refuses a kfp outside :func:`supported_kfp`.

    Args:
        installed: The kfp version to check; None reads the installed one.

    Raises:
        UnsupportedKfpError: That version is outside the range, not a version, or kfp is
            not installed; the message names the version, the range and the fix.
    """
    supported = supported_kfp()
    installed = installed_kfp() if installed is None else installed
    try:
        accepted = Version(installed) in supported
    except InvalidVersion:
        accepted = False
    if not accepted:
        raise UnsupportedKfpError(
            f"kfp {installed} is installed; the local runner supports kfp{supported} only "
            f"(it relies on kfp.local's internals, which change between versions): "
            f"pip install 'kfp{supported}'"
        )
