"""Display names Vertex limits (1 to 128 characters), refused before a run starts: a
129-character ``model_display_name`` used to train and evaluate and fail at register-model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.examples import DRINK_SHOPS
from vertex_retrain.cli.main import main
from vertex_retrain.cli.preflight_checks import Settings, pipeline_problems
from vertex_retrain.specs.display_names import MAX_DISPLAY_NAME, display_name_problems

WEEKLY = f"{DRINK_SHOPS / 'pipelines.py'}:weekly"
LONGEST = "m" * MAX_DISPLAY_NAME
TOO_LONG = "m" * (MAX_DISPLAY_NAME + 1)


@pytest.mark.parametrize(
    ("arguments", "refused"),
    [
        ({"model_display_name": LONGEST, "endpoint_display_name": LONGEST}, []),
        ({"model_display_name": TOO_LONG}, ["--param model_display_name"]),
        ({"model_display_name": "m", "endpoint_display_name": TOO_LONG},
         ["--param endpoint_display_name"]),
        ({"model_display_name": "m", "endpoint_display_name": ""}, []),  # no deployment
        ({"model_display_name": " "}, ["--param model_display_name"]),
        ({"model_display_name": 7}, ["--param model_display_name"]),
        ({"other_name": TOO_LONG}, []),
    ],
    ids=["128", "model-129", "endpoint-129", "no-endpoint", "blank-model", "number", "other"],
)  # fmt: skip
def test_display_name_problems_refuse_names_vertex_refuses(
    arguments: dict[str, Any], refused: list[str]
) -> None:
    problems = display_name_problems(arguments)
    assert [p.field for p in problems] == refused
    assert all(p.severity == "error" for p in problems)


def test_run_refuses_a_129_character_model_name_before_anything_runs(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # --local: nothing may start (no run folder, no task) before the name is refused.
    code = main(["run", WEEKLY, "--local", "--param", f"model_display_name={TOO_LONG}"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1, err
    assert err.startswith("run: error: --param model_display_name")
    assert "129 characters; Vertex takes at most 128" in err
    assert not (root / "pipeline-root").exists() and not (root / "runs").exists()


def test_preflight_reports_a_long_endpoint_name() -> None:
    problems = pipeline_problems({}, {"endpoint_display_name": TOO_LONG}, Settings())
    assert "--param endpoint_display_name" in [p.field for p in problems]


def test_run_local_from_python_refuses_a_129_character_model_name(root: Path) -> None:
    from vertex_retrain import run_local

    with pytest.raises(ValueError, match="129 characters; Vertex takes at most 128"):
        run_local(WEEKLY, {"model_display_name": TOO_LONG})
    assert not (root / "pipeline-root").exists() and not (root / "runs").exists()
