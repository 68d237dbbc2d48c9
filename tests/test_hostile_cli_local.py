"""Bad input to the local commands: one line on stderr, exit 2, no traceback, nothing made.

`serve` on a port in use, a port out of range or an address of another machine;
`--db` pointing at a device, a folder, an empty file or nowhere; `VERTEX_LOCAL_ROOT`
pointing at a file; `estimate --training-hours` negative, NaN or infinite. The commands run
in this process (`main([...])`); one case also runs `compile.py` as a process.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from data.serving.support import register_echo

from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
from vertex_retrain.backends.local.serving.endpoint_servers import stop_servers
from vertex_retrain.backends.local.serving.endpoints import LocalEndpoints
from vertex_retrain.cli.main import main

REPO = Path(__file__).resolve().parent.parent


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str], expected: str) -> None:
    try:
        code = main(argv)
    except SystemExit as stop:  # argparse refuses with exit 2
        code = int(stop.code or 0)
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert code == 2, captured.err + captured.out
    assert len(lines) == 1 and expected in lines[0], captured.err
    assert "Traceback" not in captured.err + captured.out


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["serve", "ep", "--port", "99999"], "99999 is not a port number"),
        (["serve", "ep", "--port", "-1"], "-1 is not a port number"),
        (["serve", "ep", "--host", "8.8.8.8"], "--host 8.8.8.8 is not an address of this machine"),
        (["serve", "ep", "--host", "no-such-host.invalid"], "--host no-such-host.invalid"),
        (["estimate", "weekly-retraining", "--training-hours", "-1"], "pass 0 or more"),
        (["estimate", "weekly-retraining", "--training-hours", "nan"], "pass 0 or more"),
        (["estimate", "weekly-retraining", "--training-hours", "inf"], "pass 0 or more"),
        (["estimate", "weekly-retraining", "--training-hours", "ten"], "not a number of hours"),
    ],
)
def test_serve_and_estimate_refuse_bad_values_in_one_line(
    root: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    _refused(capsys, argv, expected)


@pytest.mark.slow
def test_serve_on_a_port_in_use_is_refused_before_any_model_server_starts(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    register_echo(ModelRegistry(), "a", 5)
    endpoints = LocalEndpoints()
    endpoints.get_or_create("ep")
    endpoints.deploy("ep", "recs", "1")
    stop_servers("ep")
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        _refused(
            capsys, ["serve", "ep", "--port", str(port)], f"port {port} on 127.0.0.1 is in use"
        )
    assert [m.running for m in LocalEndpoints().get("ep").deployed_models] == [False]


@pytest.mark.parametrize(
    ("command", "db", "expected"),
    [
        ("models", "/dev/null", "is not a regular file"),
        ("endpoints", "{tmp}", "is a folder"),
        ("models", "{tmp}/typo.db", "no registry database there"),
        ("endpoints", "{tmp}/empty.db", "is an empty file"),
        ("serve", "{tmp}/typo.db", "no registry database there"),
    ],
)
def test_db_option_refuses_what_is_not_a_registry_and_makes_nothing(
    root: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    db: str,
    expected: str,
) -> None:
    (tmp_path / "empty.db").touch()
    path = db.format(tmp=tmp_path)
    argv = [command, *(["ep"] if command == "serve" else []), "--db", path]
    _refused(capsys, argv, expected)
    assert not (tmp_path / "typo.db").exists()
    assert (tmp_path / "empty.db").stat().st_size == 0
    assert not (root / "registry.db").exists()  # nor at the default location


def test_db_option_makes_a_registry_only_with_create(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    for path in (tmp_path / "new.db", empty):
        assert main(["models", "--db", str(path), "--create"]) == 0
        assert path.read_bytes().startswith(b"SQLite format 3\0")
        assert main(["models", "--db", str(path)]) == 0  # a registry now: no --create needed
    assert main(["models"]) == 0  # the default location is made without asking
    assert (root / "registry.db").is_file()
    capsys.readouterr()


@pytest.mark.parametrize("inside", [False, True])
@pytest.mark.parametrize(
    "argv",
    [["models"], ["endpoints"], ["serve", "ep"], ["history"], ["run", "train-only", "--local"]],
)
def test_local_root_that_is_a_file_is_refused_in_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    inside: bool,
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(blocker / "root" if inside else blocker))
    _refused(capsys, argv, "not a folder; point it at a folder")
    assert blocker.read_text() == "not a folder"


def test_compile_py_serve_with_a_bad_port_exits_2_in_one_line(root: Path) -> None:
    result = subprocess.run(
        [sys.executable, "compile.py", "serve", "ep", "--port", "99999"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "is not a port number" in result.stderr
