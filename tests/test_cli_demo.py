"""``compile.py demo``'s data step: the reference trainer's generator, run by its command line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from vertex_retrain.backends.local.storage import to_local_path
from vertex_retrain.cli import demo
from vertex_retrain.pipelines import defaults

SMALL = {"members": 40, "stores": 5, "weeks": 3, "seed": 7}


def test_ensure_demo_data_writes_the_transactions_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path))
    monkeypatch.setattr(demo, "DEMO_SCALE", SMALL)
    out = io.StringIO()
    demo.ensure_demo_data(out)
    generation = to_local_path(defaults.TRANSACTIONS_URI) / "generation.json"
    assert json.loads(generation.read_text())["config"]["members"] == SMALL["members"]
    assert "wrote" in out.getvalue()
    again = io.StringIO()
    demo.ensure_demo_data(again)
    assert "already at" in again.getvalue()


def test_ensure_demo_data_reports_the_generator_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path))
    monkeypatch.setattr(demo, "DEMO_SCALE", {**SMALL, "members": 0})
    with pytest.raises(demo.DemoDataError, match=r"trainer\.data generate .*--members=0"):
        demo.ensure_demo_data(io.StringIO())
    assert not (to_local_path(defaults.TRANSACTIONS_URI) / "generation.json").exists()
