"""Fuzzing the storage mappings with hypothesis: no URI maps outside the storage root.

`vertex_retrain.backends.local.storage.to_local_path` (the local backend) and
`trainer.paths.resolve` (code inside a job) turn `gs://` and `/gcs/` URIs into paths.
Whatever the URI, the result
is inside the root, or the URI is refused with the module's own error.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from trainer.paths import resolve
from vertex_retrain.backends.local.storage import StorageError, to_local_path

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "0")) or None
FUZZ = settings(max_examples=EXAMPLES or 400, deadline=None)

SEGMENTS = st.sampled_from(["..", ".", "", "b", "x y", "..\\..", "%2e%2e", "~", "\0", "\u2025"])
URIS = st.builds(
    lambda prefix, parts: prefix + "/".join(parts),
    st.sampled_from(["gs://", "/gcs/", "gs:/", "gs://b/", "/gcs//", "/gcs/b/", "GS://"]),
    st.lists(SEGMENTS | st.text(max_size=5), max_size=8),
)


@FUZZ
@given(URIS)
def test_to_local_path_stays_inside_the_root_or_refuses(
    tmp_path_factory: pytest.TempPathFactory, uri: str
) -> None:
    root = tmp_path_factory.getbasetemp() / "fuzz-root"
    gcs = (root / "gcs").resolve()
    try:
        path = to_local_path(uri, root)
    except StorageError:
        return
    if uri.startswith(("gs://", "/gcs/")):
        assert path == gcs or gcs in path.parents, (uri, path)
    else:
        assert path == Path(uri).expanduser().resolve()  # a plain local path, by design


@FUZZ
@given(URIS)
@example("/gcs///etc/passwd")  # found by this test: "//" is a root of its own in POSIX paths
@example("gs:////etc/passwd")
def test_trainer_resolve_stays_inside_the_mount_or_refuses(uri: str) -> None:
    mount = "/fuzz-mount"
    previous = os.environ.get("GCS_FUSE_ROOT")
    os.environ["GCS_FUSE_ROOT"] = mount
    try:
        path = resolve(uri)
    except ValueError:
        return
    finally:
        if previous is None:
            os.environ.pop("GCS_FUSE_ROOT")
        else:
            os.environ["GCS_FUSE_ROOT"] = previous
    if uri.startswith(("gs://", "/gcs/")) or uri == "/gcs":
        normalised = os.path.normpath(path)
        assert normalised.startswith(mount + "/"), (uri, path)
