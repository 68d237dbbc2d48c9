"""Map gs:// and /gcs/ URIs under $GCS_FUSE_ROOT, as training code does locally."""

import json
import os
from pathlib import Path


def local(uri: str) -> Path:
    root = os.environ.get("GCS_FUSE_ROOT")
    for prefix in ("gs://", "/gcs/"):
        if uri.startswith(prefix) and root:
            return Path(root) / uri[len(prefix) :]
    return Path(uri)


def write_json(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(value))
    os.replace(tmp, path)
