"""The README's "Bring your own model" guide, followed as written in an empty repository.

Every block the guide marks ``<!-- file: PATH -->`` is written to PATH in a new folder; every
bash block marked ``<!-- byom: run -->`` runs there for real, in order, with the library's
command line on the PATH (a local run of the guide's weekly pipeline included); the guide's
other commands (those that need Google Cloud) must parse with the real command line, and the
offline ones among them (``compile``, ``preflight`` without a project) run for real too. The
guide's server is also run alone against a slow, a refused and a malformed request.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from vertex_retrain.backends.local.serving.model_server import free_port
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
    # Each step by its display name, as the Vertex AI console shows it: never kfp.local's
    # generated name (deploy-model, register-model-2, condition-branches-6).
    assert "✓ step deploy: done" in run and "✓ step register-champion: done" in run
    assert not re.search(r"step [\w-]*(model|condition-branches)[\w-]*:", run), run[-3000:]
    assert "energy-use version 1 (aliases champion, default)" in run
    history = next(text for line, text in trial.outputs.items() if "history energy-use" in line)
    rows = [line.split() for line in history.splitlines() if line.startswith("2026-")]
    assert rows and rows[0][1] == "champion", history
    estimate = next(text for line, text in trial.outputs.items() if " estimate " in line)
    assert "the trainer at " in estimate and "declares no warm start" in estimate, estimate
    assert "on its machine (no GPU)" in estimate and "one GPU" not in estimate, estimate
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


def _guide_file(path: str) -> str:
    return next(m["code"] for m in _FILE.finditer(guide()) if m["path"] == path)


def _energy_post(port: int, body: bytes) -> tuple[int, dict[str, object]]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        connection.request("POST", "/predict", body)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_byom_guide_server_holds_against_slow_large_and_huge_requests(tmp_path: Path) -> None:
    (tmp_path / "serve.py").write_text(_guide_file("energy/energy/serve.py"), encoding="utf-8")
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "model.json").write_text(json.dumps({"coef": [100.0, -3.0]}))
    port = free_port()
    env = {"AIP_STORAGE_URI": str(tmp_path / "model"), "AIP_HTTP_PORT": str(port)}
    server = subprocess.Popen(
        [sys.executable, str(tmp_path / "serve.py")],
        env={**os.environ, **env, "LOCAL_BIND_HOST": "127.0.0.1"},
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(600):  # until it listens
            assert server.poll() is None
            with contextlib.suppress(ConnectionRefusedError):
                socket.create_connection(("127.0.0.1", port)).close()
                break
            time.sleep(0.05)
        good = json.dumps({"instances": [{"temperature": 10.0}]}).encode()
        with socket.create_connection(("127.0.0.1", port), timeout=20) as slow:
            slow.sendall(b"POST /predict HTTP/1.0\r\nContent-Length: 100\r\n\r\n{")
            # A client that stalls mid-body holds its own thread, not the server.
            assert _energy_post(port, good) == (200, {"predictions": [70.0]})
        # A number too large for a float, and a body sent whole before reading the 413.
        huge = b'{"instances": [{"temperature": 1%s}]}' % (b"0" * 400)
        assert _energy_post(port, huge)[0] == 400
        request = urllib.request.Request(f"http://127.0.0.1:{port}/", data=b" " * 20_000_000)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=60)
        assert refused.value.code == 413
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_byom_guide_evaluation_writes_its_metrics_file_whole_or_not_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    for name in ("__init__", "task", "evaluate"):
        path = tmp_path / "energy" / f"{name}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(_guide_file(f"energy/energy/{name}.py"), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    modules = ("energy", "energy.task", "energy.evaluate")
    try:
        evaluate = importlib.import_module("energy.evaluate")
        np = evaluate.np
        monkeypatch.setattr(evaluate, "rows", lambda data, part: (np.ones(2), np.zeros(2)))
        monkeypatch.setattr(evaluate, "mae", lambda model_dir, temperature, kwh: 1.5)
        output = tmp_path / "eval" / "metrics.json"
        monkeypatch.setattr(sys, "argv", ["evaluate", "--candidate-model-dir", "m", "--data",
                                          "d", "--metrics-output", str(output)])  # fmt: skip
        output.parent.mkdir()
        output.write_text("last run's file")
        real_write = Path.write_text

        def crash_halfway(self: Path, text: str, *args: object, **kwargs: object) -> int:
            real_write(self, text[: len(text) // 2])
            raise OSError("the job was preempted while writing")

        with monkeypatch.context() as crash:
            crash.setattr(Path, "write_text", crash_halfway)
            with pytest.raises(OSError, match="preempted"):
                evaluate.main()
        # The crash left the file as it was, never half a report.
        assert output.read_text() == "last run's file"
        evaluate.main()
        assert json.loads(output.read_text())["candidate"] == {"mae": 1.5}
        assert [p.name for p in output.parent.iterdir()] == ["metrics.json"]
    finally:
        for module in modules:
            sys.modules.pop(module, None)
