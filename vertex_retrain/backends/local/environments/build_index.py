"""The local build index, `<root>/builds/index.json`: what each local build produced.

Writers hold a lock file and replace the index atomically, so concurrent builds lose no
record and a crash leaves the previous index intact.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vertex_retrain.atomic_files import atomic_write_json
from vertex_retrain.backends.local.storage import file_lock, read_json

IMAGES = "images"
PACKAGES = "packages"


class ImageNotBuiltError(ValueError):
    """A container image the local builder has no record of."""


def index_path(root: Path) -> Path:
    """Path of the build index under the storage root."""
    return root / "builds" / "index.json"


def load_index(root: Path) -> dict[str, dict[str, Any]]:
    """Return the whole index (`{"images": {...}, "packages": {...}}`)."""
    index = read_json(index_path(root), default={}) or {}
    index.setdefault(IMAGES, {})
    index.setdefault(PACKAGES, {})
    return index


def record_build(root: Path, kind: str, key: str, record: dict[str, Any]) -> None:
    """Store `record` under `index[kind][key]`, replacing any older record."""
    with file_lock(root / "builds" / "index.lock"):
        index = load_index(root)
        index[kind][key] = record
        atomic_write_json(index_path(root), index)


def normalise_image(image_uri: str) -> str:
    """Return the image name with its tag (`:latest` when none) and without a digest."""
    name = image_uri.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return name if ":" in last else f"{name}:latest"


def lookup_image(image_ref: str, root: Path) -> dict[str, Any]:
    """Find the local build behind an image reference (`name[:tag][@sha256:digest]`).

    Raises:
        ImageNotBuiltError: The local builder never built this image, or the digest in the
            reference is not the image's current build.
    """
    name = normalise_image(image_ref)
    record = load_index(root)[IMAGES].get(name)
    if record is None:
        raise ImageNotBuiltError(
            f"image {image_ref!r} was not built by the local builder, so there is nothing to run "
            "locally (a registry image cannot be pulled here). Build it with "
            "the build_container component (kind='container', backend='local'), or "
            "use a pythonPackageSpec with a prebuilt executorImageUri"
        )
    _, _, wanted = image_ref.partition("@")
    if wanted and wanted != f"sha256:{record['digest']}":
        raise ImageNotBuiltError(
            f"image {image_ref!r} asks for digest {wanted}, but the local build of {name} is "
            f"sha256:{record['digest']} (its context changed since); use the newer reference "
            "or rebuild"
        )
    return record
