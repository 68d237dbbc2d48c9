"""`python compile.py --help` stays cheap: no aiplatform, torch, GCPC or kfp at start-up."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("google.cloud.aiplatform", "torch", "google_cloud_pipeline_components", "kfp", "optuna")


def test_compile_help_imports_no_heavy_module() -> None:
    probe = (
        "import runpy, sys\n"
        "sys.argv = ['compile.py', '--help']\n"
        "try:\n"
        "    runpy.run_path('compile.py', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        f"heavy = [m for m in sys.modules if m.split('.')[0] in {HEAVY!r} "
        f"or any(m.startswith(h) for h in {HEAVY!r})]\n"
        "print('HEAVY:' + ','.join(sorted(heavy)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert "usage: python compile.py" in result.stdout
    assert result.stdout.strip().splitlines()[-1] == "HEAVY:"


def test_compile_subcommand_help_lists_every_command() -> None:
    result = subprocess.run(
        [sys.executable, "compile.py", "--help"], cwd=ROOT, capture_output=True, text=True
    )
    for command in ("compile", "run", "estimate", "validate", "upload", "schedule", "models",
                    "endpoints", "serve", "history", "preflight", "build-image"):  # fmt: skip
        assert f"    {command}" in result.stdout, command
    # The drink shops' demo is the example's own script (examples/drink_shops/demo.py).
    assert "    demo" not in result.stdout


def test_compile_options_count_before_or_after_the_subcommand() -> None:
    sys.path.insert(0, str(ROOT))
    from vertex_retrain.cli import main as cli

    parser = cli.build_parser()
    assert parser.parse_args(["--out", "X", "compile"]).out == "X"
    assert parser.parse_args(["compile", "--out", "Y"]).out == "Y"
    assert parser.parse_args([]).out == "dist"
    image = parser.parse_args(["--component-image", "I", "run", "w"]).component_image
    assert image == "I"
    assert parser.parse_args(["run", "w", "--component-image", "J"]).component_image == "J"
    assert parser.parse_args(["run", "w"]).component_image is None
