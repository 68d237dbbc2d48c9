"""The README's "Bring your own model" guide, followed as written in an empty repository.

Every block the guide marks ``<!-- file: PATH -->`` is written to PATH in a new folder; every
bash block marked ``<!-- byom: run -->`` runs there for real, in order, with the library's
command line on the PATH (a local run of the guide's weekly pipeline included); the guide's
other commands (those that need Google Cloud) must parse with the real command line, and the
offline ones among them (``compile``, ``preflight`` without a project) run for real too.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from vertex_retrain.cli.main import build_parser

README = Path(__file__).resolve().parent.parent / "README.md"
_FILE = re.compile(r"^<!-- file: (?P<path>\S+) -->\n```\w*\n(?P<code>.*?)^```", re.S | re.M)
_BASH = re.compile(r"^(?P<marker><!-- byom: run -->\n)?```bash\n(?P<code>.*?)^```", re.S | re.M)
_OFFLINE = {"compile", "preflight"}

pytestmark = pytest.mark.slow


def guide() -> str:
    """The README's guide section."""
    text = README.read_text(encoding="utf-8")
    start = text.index("## Bring your own model")
    return text[start : text.index("\n## ", start + 1)]


def commands(code: str) -> list[str]:
    """The command lines of a bash block (continuations joined, comments kept out)."""
    joined = re.sub(r"\\\n\s*", " ", code)
    return [line for line in joined.splitlines() if line.strip() and not line.startswith("#")]


@dataclass(frozen=True)
class Trial:
    """The repository the guide built, and what each command printed."""

    repo: Path
    outputs: dict[str, str]


def _env(root: Path) -> dict[str, str]:
    env = {**os.environ, "VERTEX_LOCAL_ROOT": str(root)}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for name in ("GCS_FUSE_ROOT", "PYTHONPATH"):  # a user's shell has neither
        env.pop(name, None)
    return env


def _run(line: str, repo: Path, root: Path) -> str:
    done = subprocess.run(
        ["bash", "-c", line], cwd=repo, env=_env(root), capture_output=True, text=True,
        timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"`{line}` exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def trial(tmp_path_factory: pytest.TempPathFactory) -> Trial:
    base = tmp_path_factory.mktemp("byom")
    repo, root = base / "my-energy", base / "local-root"
    section = guide()
    for match in _FILE.finditer(section):
        path = repo / match["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(match["code"], encoding="utf-8")
    outputs: dict[str, str] = {}
    for block in _BASH.finditer(section):
        if block["marker"]:
            for line in commands(block["code"]):
                outputs[line] = _run(line, repo, root)
    return Trial(repo, outputs)


def test_byom_guide_files_make_a_complete_repository(trial: Trial) -> None:
    names = sorted(str(p.relative_to(trial.repo)) for p in trial.repo.rglob("*") if p.is_file())
    expected = {
        "data.py", "dataset.yaml", "evaluation.yaml", "pipeline.py", "schedules.yaml",
        "energy/pyproject.toml", "energy/energy/task.py", "energy/energy/evaluate.py",
        "energy/energy/serve.py",
    }  # fmt: skip
    assert expected <= set(names), names


def test_byom_guide_runs_the_weekly_pipeline_locally_and_records_the_week(trial: Trial) -> None:
    run = next(text for line, text in trial.outputs.items() if " run pipeline.py:weekly" in line)
    assert "run energy-weekly succeeded" in run, run[-3000:]
    assert "✓ step deploy-model: done" in run
    assert "energy-use version 1 (aliases champion, default)" in run
    history = next(text for line, text in trial.outputs.items() if "history energy-use" in line)
    rows = [line.split() for line in history.splitlines() if line.startswith("2026-")]
    assert rows and rows[0][1] == "champion", history
    schedule = next(text for line, text in trial.outputs.items() if "schedule" in line)
    assert "schedule energy-weekly (active)" in schedule and "0 4 * * 1 in Europe/Paris" in schedule


def test_byom_guide_vertex_commands_parse_and_the_offline_ones_run(
    trial: Trial, tmp_path: Path
) -> None:
    vertex = [
        line
        for block in _BASH.finditer(guide())
        if not block["marker"]
        for line in commands(block["code"])
    ]
    assert any(line.startswith("vertex-retrain upload") for line in vertex), vertex
    for line in vertex:
        words = shlex.split(line)
        assert words[0] == "vertex-retrain", line
        arguments = build_parser().parse_args(words[1:])  # SystemExit on an unknown flag
        if arguments.command in _OFFLINE and not getattr(arguments, "project", None):
            _run(line, trial.repo, tmp_path / "root")
    assert (trial.repo / "dist" / "pipelines" / "energy-weekly.yaml").is_file()
