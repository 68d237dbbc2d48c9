"""Text from data printed to a terminal shows its control characters instead of obeying them:
a model name or artifact URI holding escape sequences cannot retitle the terminal, clear it
or forge a table row (`models`, `history`, `validate` share `console.printable`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
from vertex_retrain.backends.local.model_registry.weeks_on_record import RunHistory
from vertex_retrain.cli.console import printable
from vertex_retrain.cli.main import main
from vertex_retrain.run_record import RunRecord

EVIL_NAME = "evil\x1b]0;pwned\x07name\x1b[31m"
EVIL_URI = "gs://b/m/\x1b[2J\r\nforged row\u202e"
CONTROLS = [chr(c) for c in (*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, 0x202E, 0x2066)]


def test_printable_writes_every_control_as_json_does_and_leaves_text_alone() -> None:
    assert printable("évé ok/—✓ tab") == "évé ok/—✓ tab"
    assert printable("a\x1b[2Jb\nc") == "a\\u001b[2Jb\\u000ac"
    for control in CONTROLS:
        shown = printable(control)
        assert shown == f"\\u{ord(control):04x}" and shown.isprintable(), repr(control)


def _evil_model() -> None:
    ModelRegistry().upload_version(
        EVIL_NAME,
        artifact_uri=EVIL_URI,
        container_spec={"imageUri": "x", "command": ["python", "-m", "serve"]},
    )


def _assert_shown_not_obeyed(text: str) -> None:
    assert all(line.isprintable() for line in text.splitlines()), text


def test_models_escapes_names_and_artifact_uris(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _evil_model()
    assert main(["models", "--wide"]) == 0
    out = capsys.readouterr().out
    _assert_shown_not_obeyed(out)
    assert len(out.splitlines()) == 2  # heading and one row: no forged row
    assert "evil\\u001b]0;pwned\\u0007name\\u001b[31m" in out
    assert main(["models", EVIL_NAME, "--wide"]) == 0
    out = capsys.readouterr().out
    _assert_shown_not_obeyed(out)
    assert len(out.splitlines()) == 2
    assert "gs://b/m/\\u001b[2J\\u000d\\u000aforged row\\u202e" in out


def test_history_escapes_the_model_name_in_its_heading_and_rows(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    RunHistory().record(
        RunRecord(run="r1", model=EVIL_NAME, backend="local", state="FAILED", as_of="2026-11-09")
    )
    assert main(["history", "--no-plot"]) == 0
    out = capsys.readouterr().out
    _assert_shown_not_obeyed(out)
    assert out.startswith("evil\\u001b]0;pwned\\u0007name\\u001b[31m: ")


def test_validate_escapes_a_file_name_with_controls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "job\x1b[2J.yaml"
    path.write_text("displayName: [\n")
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    _assert_shown_not_obeyed(out)
    assert "job\\u001b[2J.yaml: INVALID" in out
