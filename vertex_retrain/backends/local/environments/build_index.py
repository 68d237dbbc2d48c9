"""The local build index, `<root>/builds/index.json`: what each local build produced.

`images` holds each image name's newest build; `image_builds` holds every build by
`name@sha256:<digest>`, so a cached step that returns an earlier reference still runs that
build, as the registry keeps every pushed image on Vertex. Indexes written before
`image_builds` existed still load (their newest builds resolve as before).

Writers hold a lock file and replace the index atomically, so concurrent builds lose no
record and a crash leaves the previous index intact.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vertex_retrain.atomic_files import atomic_write_json
from vertex_retrain.backends.local.storage import file_lock, read_json
from vertex_retrain.build.context import context_digest, context_files

IMAGES = "images"
IMAGE_BUILDS = "image_builds"
PACKAGES = "packages"


class ImageNotBuiltError(ValueError):
    """A container image the local builder has no record of."""


class StaleImageError(ImageNotBuiltError):
    """A reference to an earlier build of an image that cannot run locally as it was built."""


def index_path(root: Path) -> Path:
    """Path of the build index under the storage root."""
    return root / "builds" / "index.json"


def load_index(root: Path) -> dict[str, dict[str, Any]]:
    """Return the whole index (`{"images": {...}, "image_builds": {...}, "packages": {...}}`)."""
    index = read_json(index_path(root), default={}) or {}
    index.setdefault(IMAGES, {})
    index.setdefault(IMAGE_BUILDS, {})
    index.setdefault(PACKAGES, {})
    return index


def record_build(root: Path, kind: str, key: str, record: dict[str, Any]) -> None:
    """Store `record` under `index[kind][key]`, replacing any older record."""
    with file_lock(root / "builds" / "index.lock"):
        index = load_index(root)
        index[kind][key] = record
        atomic_write_json(index_path(root), index)


def record_image(root: Path, name: str, record: dict[str, Any]) -> None:
    """Store an image build as its name's newest build and under its own digest."""
    with file_lock(root / "builds" / "index.lock"):
        index = load_index(root)
        index[IMAGES][name] = record
        index[IMAGE_BUILDS][f"{name}@sha256:{record['digest']}"] = record
        atomic_write_json(index_path(root), index)


def normalise_image(image_uri: str) -> str:
    """Return the image name with its tag (`:latest` when none) and without a digest."""
    name = image_uri.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return name if ":" in last else f"{name}:latest"


def _context_digest_now(record: dict[str, Any]) -> str | None:
    """The digest the build's context folder has now (None when it cannot be read)."""
    context = Path(record["context"])
    dockerfile = context / str(record.get("dockerfile") or "Dockerfile")
    try:
        # As the builder hashes it: the Dockerfile's text, then the context's files.
        text = dockerfile.read_text(encoding="utf-8")
        return context_digest(context, context_files(context), text.encode())
    except (OSError, UnicodeDecodeError):
        return None


def _unreproducible(record: dict[str, Any]) -> str | None:
    """Why an earlier build can no longer run as it was built (None when it can)."""
    if record.get("package"):
        if Path(record["package"]).is_file():
            return None
        return f"its project's wheel {record['package']} is gone"
    if _context_digest_now(record) == record["digest"]:
        return None
    return f"it runs from its build context {record['context']}, whose content changed since"


def lookup_image(image_ref: str, root: Path) -> dict[str, Any]:
    """Find the local build behind an image reference (`name[:tag][@sha256:digest]`).

    A reference without a digest finds the name's newest build; one with a digest finds that
    build, also when the name was rebuilt since, as long as it can still run as it was built
    (its project's wheel is kept, or the context folder it runs from holds the same content).

    Raises:
        ImageNotBuiltError: The local builder never built this image, or the digest in the
            reference is a build it has no record of or cannot run as it was built; the
            message says how to get out (`--no-cache`, or rebuild); the latter as
            `StaleImageError`.
    """
    name = normalise_image(image_ref)
    index = load_index(root)
    newest = index[IMAGES].get(name)
    if newest is None:
        raise ImageNotBuiltError(
            f"image {image_ref!r} was not built by the local builder, so there is nothing to run "
            "locally (a registry image cannot be pulled here). Build it with "
            "the build_container component (kind='container', backend='local'), or "
            "use a pythonPackageSpec with a prebuilt executorImageUri"
        )
    _, _, wanted = image_ref.partition("@")
    if not wanted or wanted == f"sha256:{newest['digest']}":
        return newest
    record = index[IMAGE_BUILDS].get(f"{name}@{wanted}")
    why = "the local builder has no record of it" if record is None else _unreproducible(record)
    if record is not None and why is None:
        return record
    raise StaleImageError(
        f"image {image_ref!r} is an earlier build of {name} that cannot run locally as it was "
        f"built ({why}; the newest local build is sha256:{newest['digest']}); run again with "
        "--no-cache so build_container rebuilds it, or rebuild the image and use its new "
        "reference"
    )
