"""Hostile command-line input and a hostile local database, through `compile.py` for real.

Each command runs as a subprocess in an empty working folder with its own local root, so
"nothing written" is checked on the file system, not assumed; a command that must wait out
the registry's 10 s busy timeout runs in process, with the timeout shortened. Covered
elsewhere: the override parser's unit cases (test_params.py), cron validation
(test_schedules.py), and the registry API on a corrupt file or a writer's lock
(test_local_registry.py).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from data.hostile.support import REPO

from vertex_retrain.backends.local.model_registry import registry_db
from vertex_retrain.backends.local.model_registry.registry import ModelRegistry
from vertex_retrain.backends.local.model_registry.registry_db import (
    RegistryCorruptError,
    RegistryDatabase,
    RegistryLockedError,
)
from vertex_retrain.cli.main import main

pytestmark = pytest.mark.slow
DIGEST = "sha256:" + "a" * 64


def _compile_py(
    args: list[str], cwd: Path, *, code_root: Path = REPO, timeout_s: float = 60
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(code_root),
        "VERTEX_LOCAL_ROOT": str(cwd / "local-root"),
    }
    return subprocess.run(
        [sys.executable, str(code_root / "compile.py"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


# ---- malformed parameter overrides ----

BAD_OVERRIDES = [
    (
        "selection_periods=ten",
        "'selection_periods' expects NUMBER_INTEGER (an integer), got 'ten'",
    ),
    ("selection_periods=1e999", "'selection_periods' expects NUMBER_INTEGER"),
    (
        "local_preemption_after_seconds=nan",
        "'local_preemption_after_seconds' expects NUMBER_DOUBLE",
    ),
    ("local_preemption_after_seconds=1e999", "not a finite number"),
    ("timeout_seconds=" + "9" * 5000, "parameter 'timeout_seconds'"),
    ("no_such_param=1", "unknown parameter 'no_such_param'"),
    ("=3", "no parameter name before '='"),
    ("selection_periods", "expected NAME=VALUE"),
    ("as_of=2026-01-01", "given more than once"),
]


def test_compile_py_run_refuses_malformed_overrides_and_writes_nothing(tmp_path: Path) -> None:
    # `estimate` shares the parser; its own refusal is in test_cli_compile.py.
    params = [arg for pair, _ in BAD_OVERRIDES for arg in ("--param", pair)]
    params[-2:-2] = ["--param", "as_of=2026-01-02"]  # as_of given twice
    result = _compile_py(["run", "train-only", "--local", *params], tmp_path)
    assert result.returncode == 2, result.stderr
    for _, message in BAD_OVERRIDES:
        assert message in result.stderr, message
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert _files(tmp_path) == []  # no local root, no log, no compiled file


# ---- an invalid cron expression in the schedule declarations ----


@pytest.fixture(scope="module", params=["61 3 * * 1", "0 3 * *"], ids=["out-of-range", "4-fields"])
def bad_cron_run(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, subprocess.CompletedProcess[str], Path]]:
    # The example's declarations with one cron edited, as a user would edit schedules.yaml.
    text = (REPO / "examples" / "drink_shops" / "schedules.yaml").read_text()
    assert text.count('cron: "0 3 * * 1"') == 1, "the weekly declaration changed; update the test"
    schedules = tmp_path_factory.mktemp("declared") / "schedules.yaml"
    schedules.write_text(text.replace('cron: "0 3 * * 1"', f'cron: "{request.param}"'))
    work = tmp_path_factory.mktemp("work")
    args = [
        "schedule",
        "--project=drink-shops",
        "--location=asia-east1",
        "--service-account=retrain@drink-shops.iam.gserviceaccount.com",
        "--pipeline-root=gs://drink-shops-ml/runs",
        f"--template-version={DIGEST}",
        "--repository=pipelines",
        f"--schedules={schedules}",
    ]
    yield request.param, _compile_py(args, work), work


def test_compile_py_schedule_names_the_invalid_cron_and_changes_nothing(
    bad_cron_run: tuple[str, subprocess.CompletedProcess[str], Path],
) -> None:
    cron, result, work = bad_cron_run
    assert result.returncode != 0
    last_line = result.stderr.strip().splitlines()[-1]
    assert f"schedule 1: drink-shops-weekly-retraining: cron '{cron}'" in last_line
    assert "e.g. '0 3 * * 1' is Mondays at 03:00" in last_line
    assert result.stdout == "" and _files(work) == []


def test_compile_py_schedule_invalid_cron_exits_2_without_traceback(
    bad_cron_run: tuple[str, subprocess.CompletedProcess[str], Path],
) -> None:
    _, result, _ = bad_cron_run
    assert result.returncode == 2 and "Traceback" not in result.stderr


# ---- a corrupt or locked registry database ----


def _upload(registry: ModelRegistry) -> None:
    registry.upload_version(
        "recs",
        artifact_uri="gs://b/models/recs/1",
        container_spec={"imageUri": "x", "command": ["python", "-m", "serve"]},
    )


def _damage_pages(path: Path) -> None:
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # fold the WAL in: damage is read
    connection.close()
    data = bytearray(path.read_bytes())
    for offset in range(100, len(data), 97):  # keep the 100-byte header: "valid" but broken
        data[offset] ^= 0x5A
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", ["garbage", "damaged-pages"])
@pytest.mark.parametrize("command", ["models", "endpoints"])
def test_compile_py_on_a_corrupt_registry_says_so_and_touches_nothing(
    tmp_path: Path, damage: str, command: str
) -> None:
    db = tmp_path / "db" / "registry.db"
    db.parent.mkdir()
    if damage == "garbage":
        db.write_bytes(b"not a database at all\n" * 100)
    else:
        _upload(ModelRegistry(db))
        _damage_pages(db)
    before = db.read_bytes()
    result = _compile_py([command, "--db", str(db)], tmp_path)
    if damage == "garbage":  # no registry's header: refused before SQLite opens it
        assert result.returncode == 2
        assert result.stderr == f"error: --db {db}: is not a registry database; pass the " + (
            "registry database file\n"
        )
    else:  # a registry we made, damaged: moving it aside is the advice
        assert result.returncode == 1
        assert result.stderr.startswith("error: registry database at ")
        assert "is not a SQLite database (corrupt?)" in result.stderr
        assert f"mv {db} {db}.bad" in result.stderr
    assert "Traceback" not in result.stderr
    assert db.read_bytes() == before
    # SQLite may open its side files for a WAL-mode header; nothing is logged into them.
    wal = db.with_name("registry.db-wal")
    assert set(_files(db.parent)) <= {"registry.db", "registry.db-shm", "registry.db-wal"}
    assert not wal.exists() or wal.stat().st_size == 0


def test_registry_api_write_on_damaged_pages_is_refused_and_changes_nothing(
    tmp_path: Path,
) -> None:
    db = tmp_path / "registry.db"
    _upload(ModelRegistry(db))
    _damage_pages(db)
    before = db.read_bytes()
    with pytest.raises(RegistryCorruptError, match="Move it aside"):
        _upload(ModelRegistry(db))
    assert db.read_bytes() == before


HOLDER = textwrap.dedent(
    """
    import sqlite3, sys
    c = sqlite3.connect(sys.argv[1], isolation_level=None)
    c.execute("PRAGMA locking_mode = EXCLUSIVE")  # readers are shut out too, even in WAL mode
    c.execute("BEGIN EXCLUSIVE")
    c.execute("UPDATE models SET display_name = 'hijacked'")
    print("locked", flush=True)
    sys.stdin.readline()  # then exit without committing
    """
)


@pytest.fixture
def locked_registry(tmp_path: Path) -> Iterator[Path]:
    db = tmp_path / "db" / "registry.db"
    db.parent.mkdir()
    _upload(ModelRegistry(db))
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield db
    finally:
        holder.communicate("\n", timeout=10)


def test_cli_models_on_a_locked_registry_says_so_after_the_busy_timeout(
    locked_registry: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The CLI waits the registry's default busy timeout (10 s) before giving up; in process,
    # the default is shortened, so the line must name the wait it read from the default.
    assert RegistryDatabase(locked_registry).busy_timeout_s == 10.0
    monkeypatch.setattr(registry_db, "DEFAULT_BUSY_TIMEOUT_S", 0.5)
    monkeypatch.setenv("VERTEX_LOCAL_ROOT", str(tmp_path / "local-root"))
    assert main(["models", "--db", str(locked_registry)]) == 1
    captured = capsys.readouterr()
    assert "locked by another process for more than 0.5 s" in captured.err
    assert "Traceback" not in captured.err and captured.out == ""


def test_registry_api_on_an_exclusively_locked_registry_refuses_reads_and_writes(
    locked_registry: Path,
) -> None:
    blocked = ModelRegistry(locked_registry, busy_timeout_s=0.2)
    with pytest.raises(RegistryLockedError, match="locked by another process"):
        blocked.list_models()
    with pytest.raises(RegistryLockedError, match="locked by another process"):
        _upload(blocked)


def test_registry_after_a_lock_holder_exits_keeps_only_committed_data(
    tmp_path: Path,
) -> None:
    db = tmp_path / "registry.db"
    _upload(ModelRegistry(db))
    holder = subprocess.run(
        [sys.executable, "-c", HOLDER, str(db)], input="\n", capture_output=True, text=True
    )
    assert holder.stdout.strip() == "locked"
    models = ModelRegistry(db).list_models()
    assert [m.display_name for m in models] == ["recs"]  # the uncommitted rename is gone


@pytest.mark.parametrize("command", ["models", "endpoints"])
def test_registry_commands_refuse_a_db_link_and_suggest_moving_nothing(
    tmp_path: Path, command: str
) -> None:
    # --db linked to a system file: refused without following it, and nothing says `mv`.
    target = tmp_path / "passwd"
    target.write_text("root:x:0:0:root:/root:/bin/bash\n")
    db = tmp_path / "registry.db"
    db.symlink_to(target)
    for extra in ([], ["--create"]) if command == "endpoints" else ([],):
        result = _compile_py([command, "--db", str(db), *extra], tmp_path)
        assert result.returncode == 2, result.stderr
        assert result.stderr == (
            f"error: --db {db}: is a symbolic link, not followed; pass the database file itself\n"
        )
    assert target.read_text() == "root:x:0:0:root:/root:/bin/bash\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["passwd", "registry.db"]


def test_registry_api_on_a_link_to_a_foreign_file_suggests_moving_nothing(tmp_path: Path) -> None:
    target = tmp_path / "passwd"
    target.write_text("root:x:0:0:root:/root:/bin/bash\n" * 20)
    link = tmp_path / "registry.db"
    link.symlink_to(target)
    with pytest.raises(RegistryCorruptError) as raised:
        ModelRegistry(link).list_models()
    assert "mv " not in str(raised.value) and "It is no registry this library made" in str(
        raised.value
    )


def test_a_new_registry_in_use_is_a_registry_before_its_first_checkpoint(tmp_path: Path) -> None:
    # While another process holds a connection, the schema stamp is only in the WAL: the
    # file's own header still says version 0, and `--db` must not refuse it.
    from vertex_retrain.backends.local.model_registry.registry_file import FileKind, file_kind

    db = tmp_path / "registry.db"
    connection = ModelRegistry(db).db._connect()  # made, migrated and held open
    try:
        assert db.read_bytes()[60:64] == b"\0\0\0\0"
        assert file_kind(db) is FileKind.REGISTRY
        result = _compile_py(["models", "--db", str(db)], tmp_path)
        assert result.returncode == 0, result.stderr
    finally:
        connection.close()
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as plain:
        plain.execute("CREATE TABLE notes (body TEXT)")
    assert file_kind(other) is FileKind.FOREIGN
