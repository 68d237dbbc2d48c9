"""Test helpers: wheels and installed distributions written directly, without pip.

A wheel is a zip with a `.dist-info` folder (METADATA, WHEEL, RECORD); an installed
distribution is a `.dist-info` folder in a site folder whose RECORD lists its files. Writing
them directly keeps the environment tests fast and offline.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path


def _metadata(name: str, version: str, requires: Sequence[str], extras: Sequence[str]) -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Provides-Extra: {extra}" for extra in extras]
    lines += [f"Requires-Dist: {requirement}" for requirement in requires]
    return "\n".join(lines) + "\n"


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def write_wheel(
    folder: Path,
    name: str,
    version: str,
    files: Mapping[str, str],
    *,
    requires: Sequence[str] = (),
    extras: Sequence[str] = (),
) -> Path:
    """Writes `name-version-py3-none-any.whl` holding `files` (path -> text) into `folder`."""
    stem = name.replace("-", "_")
    dist_info = f"{stem}-{version}.dist-info"
    contents = {path: text.encode() for path, text in files.items()}
    contents[f"{dist_info}/METADATA"] = _metadata(name, version, requires, extras).encode()
    contents[f"{dist_info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = [_record_line(path, data) for path, data in contents.items()]
    contents[f"{dist_info}/RECORD"] = (
        "\n".join([*record, f"{dist_info}/RECORD,,"]) + "\n"
    ).encode()
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{stem}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in contents.items():
            archive.writestr(path, data)
    return wheel


def write_installed(
    site: Path,
    name: str,
    version: str,
    files: Mapping[str, str],
    *,
    requires: Sequence[str] = (),
    extras: Sequence[str] = (),
    editable_source: Path | None = None,
) -> Path:
    """Installs a distribution into `site` as pip would (dist-info with a RECORD).

    With `editable_source`, `files` are written there instead and a `.pth` file in `site`
    points at it, as an editable install does.

    Returns:
        The `.dist-info` folder.
    """
    stem = name.replace("-", "_")
    dist_info = site / f"{stem}-{version}.dist-info"
    dist_info.mkdir(parents=True)
    target = editable_source or site
    recorded = []
    for path, text in files.items():
        (target / path).parent.mkdir(parents=True, exist_ok=True)
        (target / path).write_text(text)
        if editable_source is None:
            recorded.append(_record_line(path, text.encode()))
    if editable_source is not None:
        pth = f"__editable__.{stem}-{version}.pth"
        (site / pth).write_text(f"{editable_source}\n")
        recorded.append(_record_line(pth, f"{editable_source}\n".encode()))
        (dist_info / "direct_url.json").write_text(
            f'{{"url": "{editable_source.as_uri()}", "dir_info": {{"editable": true}}}}'
        )
    metadata = _metadata(name, version, requires, extras)
    (dist_info / "METADATA").write_text(metadata)
    (dist_info / "INSTALLER").write_text("pip\n")
    recorded.append(_record_line(f"{dist_info.name}/METADATA", metadata.encode()))
    recorded.append(f"{dist_info.name}/RECORD,,")
    (dist_info / "RECORD").write_text("\n".join(recorded) + "\n")
    return dist_info
