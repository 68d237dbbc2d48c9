"""Fixtures shared by the test modules."""

from __future__ import annotations

from pathlib import Path

import pytest

from vertex_retrain.backends.local.storage import local_root


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh local storage root (``VERTEX_LOCAL_ROOT``) for one test."""
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path / "root"))
    return local_root()
