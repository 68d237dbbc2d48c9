"""One gs:// <-> local mapping: the library and the trainer (which cannot import it) agree.

The rule is a contract (docs/architecture.md, "Local storage root"): `gs://B/P` and
`/gcs/B/P` map to `$VERTEX_LOCAL_ROOT/gcs/B/P` (default `./.local-vertex/gcs/B/P`), and
nothing is written to a plain `/gcs` folder at the filesystem root.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from trainer import paths as trainer_paths
from vertex_retrain.atomic_files import atomic_write_bytes
from vertex_retrain.backends.local.storage import gcs_root, local_root, to_local_path

REPO = Path(__file__).resolve().parent.parent
URIS = [
    "gs://drink-shops-ml/transactions",
    "gs://b/a/b/c.parquet",
    "/gcs/b/model/",
    "gs://bucket-with-dashes/x y/z",
]


@pytest.fixture(autouse=True)
def _no_fuse(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GCS_FUSE_ROOT", raising=False)
    if os.path.ismount("/gcs"):  # pragma: no cover - only on a machine with a real mount
        pytest.fail("this machine mounts /gcs; the contract tests need a machine without it")


@pytest.mark.parametrize("uri", URIS)
def test_storage_contract_trainer_and_library_agree_under_vertex_local_root(
    uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path / "root"))
    assert trainer_paths.resolve(uri) == to_local_path(uri)
    assert trainer_paths.storage_root() == gcs_root()


@pytest.mark.parametrize("uri", URIS)
def test_storage_contract_trainer_and_library_agree_on_the_default_root(
    uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VERTEX_LOCAL_ROOT", raising=False)
    monkeypatch.chdir(tmp_path)
    expected = tmp_path.resolve() / ".local-vertex" / "gcs"
    assert trainer_paths.storage_root() == expected == gcs_root()
    assert trainer_paths.resolve(uri) == to_local_path(uri)


def test_storage_contract_jobs_get_the_same_root_through_gcs_fuse_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path / "root"))
    # What the local executor and the model servers set for their processes.
    monkeypatch.setenv("GCS_FUSE_ROOT", str(gcs_root(local_root())))
    for uri in URIS:
        assert trainer_paths.resolve(uri) == to_local_path(uri)


def test_trainer_data_generate_to_gs_writes_under_the_local_root_only(tmp_path: Path) -> None:
    existed = Path("/gcs").exists()
    env = {k: v for k, v in os.environ.items() if k not in ("GCS_FUSE_ROOT", "VERTEX_LOCAL_ROOT")}
    result = subprocess.run(
        [sys.executable, "-m", "trainer.data", "generate", "--members", "30", "--stores", "5",
         "--weeks", "2", "--out", "gs://drink-shops-ml/transactions"],
        cwd=tmp_path, env={**env, "PYTHONPATH": str(REPO)},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    written = tmp_path / ".local-vertex" / "gcs" / "drink-shops-ml" / "transactions"
    assert (written / "generation.json").is_file()
    assert Path("/gcs").exists() == existed  # nothing at the filesystem root
    assert sorted(p.name for p in tmp_path.iterdir()) == [".local-vertex"]


def test_atomic_writes_respect_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        for write in (atomic_write_bytes, trainer_paths.atomic_write_bytes):
            target = tmp_path / write.__module__ / "file.json"
            write(target, b"{}")
            assert stat.S_IMODE(target.stat().st_mode) == 0o644, write.__module__
        os.umask(0o027)
        atomic_write_bytes(tmp_path / "private.json", b"{}")
        assert stat.S_IMODE((tmp_path / "private.json").stat().st_mode) == 0o640
    finally:
        os.umask(previous)
