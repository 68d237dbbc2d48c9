"""The artifact index, `artifact.json`: its schema, and files confined to the model folder.

`{"format": "drinkshop-recommender/v1", "sha256": {"weights.pt": "<64 hex>", ...}}`. Each name
is a plain relative path that must stay inside the model folder, symlinks resolved, and name
a regular file: a hostile index cannot make the server read `/dev/zero`, a FIFO or a file
outside the folder. Every problem is an `ArtifactError` on one line, naming the key.
No torch here: `trainer.model_fetch` and the checks run before anything heavy is imported.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

ARTIFACT_FORMAT = "drinkshop-recommender/v1"
INDEX_FILE = "artifact.json"
# Files the loader reads; each must be listed, so none is read unverified.
REQUIRED_FILES = ("weights.pt", "config.json", "vocab.json", "catalogue.json", "popularity.json")
MAX_INDEX_BYTES = 1 << 20
_KEYS = ("format", "sha256")
_SHA256 = re.compile(r"[0-9a-f]{64}")


class ArtifactError(ValueError):
    """A model folder that cannot be served; the message is one line naming the key."""


@dataclass(frozen=True)
class ArtifactIndex:
    """A checked index.

    Attributes:
        folder: The model folder, symlinks resolved.
        sha256: File name (relative to `folder`) -> lowercase hex SHA-256.
    """

    folder: Path
    sha256: dict[str, str]


def _open_regular(path: Path, shown: str) -> int:
    """Open a regular file for reading; never blocks on a FIFO or a device."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise ArtifactError(f"{shown}: cannot open: {error.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ArtifactError(f"{shown}: not a regular file")
    return fd


def read_bytes(path: Path, shown: str, max_bytes: int | None = None) -> bytes:
    """Read a regular file whole.

    Raises:
        ArtifactError: Not a regular file, unreadable, or over `max_bytes`.
    """
    with os.fdopen(_open_regular(path, shown), "rb") as handle:
        data = handle.read() if max_bytes is None else handle.read(max_bytes + 1)
    if max_bytes is not None and len(data) > max_bytes:
        raise ArtifactError(f"{shown}: larger than {max_bytes} bytes")
    return data


def sha256_regular(path: Path, shown: str) -> str:
    """Hex SHA-256 of a regular file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with os.fdopen(_open_regular(path, shown), "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def member_path(folder: Path, name: str) -> Path:
    """The file `name` of the index, checked to stay inside `folder` (already resolved).

    Raises:
        ArtifactError: An absolute name, `..`, a symlink leading out, a missing file.
    """
    shown = f"{INDEX_FILE}: sha256[{name!r}]"
    parts = PurePosixPath(name).parts
    if not name or "\\" in name or "\0" in name or PurePosixPath(name).is_absolute():
        raise ArtifactError(f"{shown}: expected a file name relative to the model folder")
    if any(part in {"..", "."} for part in parts) or name.endswith("/"):
        raise ArtifactError(f"{shown}: '.' and '..' are not allowed; name a file in the folder")
    return _confined(folder, name, shown)


def _confined(folder: Path, name: str, shown: str) -> Path:
    try:
        resolved = (folder / name).resolve(strict=True)
    except FileNotFoundError:
        raise ArtifactError(f"{shown}: listed but missing from {folder}") from None
    except (OSError, RuntimeError) as error:  # RuntimeError: a symlink loop
        raise ArtifactError(f"{shown}: cannot resolve: {error}") from None
    if folder not in resolved.parents:
        raise ArtifactError(f"{shown}: leads outside the model folder (to {resolved})")
    return resolved


def read_index(model_dir: Path) -> ArtifactIndex:
    """Read and check `model_dir/artifact.json`.

    Raises:
        FileNotFoundError: No index (not a model folder, or the export did not finish).
        ArtifactError: Any other problem with the index, on one line.
    """
    folder = model_dir.resolve()
    if not (folder / INDEX_FILE).exists():
        raise FileNotFoundError(
            f"{model_dir} has no {INDEX_FILE}; expected a folder written by trainer.task"
        )
    index_path = _confined(folder, INDEX_FILE, INDEX_FILE)
    raw = read_bytes(index_path, INDEX_FILE, MAX_INDEX_BYTES)
    try:
        index = json.loads(raw)
    except (ValueError, RecursionError) as error:
        raise ArtifactError(f"{INDEX_FILE}: not valid JSON ({error})") from None
    if not isinstance(index, dict):
        raise ArtifactError(
            f"{INDEX_FILE}: expected a JSON object with keys {list(_KEYS)}, "
            f"got {type(index).__name__}"
        )
    missing = [key for key in _KEYS if key not in index]
    unknown = sorted(set(map(str, index)) - set(_KEYS))
    if missing or unknown:
        problems = [f"missing key {key!r}" for key in missing]
        problems += [f"unknown key {key!r}" for key in unknown[:5]]
        raise ArtifactError(f"{INDEX_FILE}: {', '.join(problems)}; expected exactly {list(_KEYS)}")
    if index["format"] != ARTIFACT_FORMAT:
        raise ArtifactError(
            f"{INDEX_FILE}: 'format' is {index['format']!r}, expected {ARTIFACT_FORMAT!r}"
        )
    hashes = index["sha256"]
    if not isinstance(hashes, dict):
        raise ArtifactError(
            f"{INDEX_FILE}: 'sha256' must map file names to SHA-256 hex digests, "
            f"got {type(hashes).__name__}"
        )
    for name, digest in hashes.items():
        if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
            raise ArtifactError(
                f"{INDEX_FILE}: sha256[{name!r}] must be 64 lowercase hex digits, "
                f"got {str(digest)[:80]!r}"
            )
        member_path(folder, name)
    absent = [name for name in REQUIRED_FILES if name not in hashes]
    if absent:
        raise ArtifactError(f"{INDEX_FILE}: 'sha256' does not list {absent}; re-export")
    return ArtifactIndex(folder, dict(hashes))


def verify(index: ArtifactIndex) -> dict[str, Path]:
    """Hash every listed file against the index.

    Returns:
        File name -> its checked path.

    Raises:
        ArtifactError: A file that is not regular, or whose SHA-256 does not match.
    """
    checked = {}
    for name, digest in index.sha256.items():
        path = member_path(index.folder, name)
        if sha256_regular(path, f"{INDEX_FILE}: sha256[{name!r}]") != digest:
            raise ArtifactError(f"{path}: SHA-256 does not match {INDEX_FILE}; re-export")
        checked[name] = path
    return checked
