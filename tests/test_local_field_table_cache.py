"""The aiplatform_v1 field table cached under the local root: the same table, read without
importing aiplatform_v1, and rebuilt when the file is damaged, planted (a FIFO, a link, deep
nesting, another user's) or forged (the right shape, checking nothing)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from vertex_retrain.backends.local.jobs.field_table_cache import (
    cache_file,
    cache_mode,
    cached_field_table,
    warm_in_background,
)
from vertex_retrain.specs.proto_fields import (
    CUSTOM_JOB,
    job_field_table,
    table_from_json,
    table_to_json,
)
from vertex_retrain.specs.validate import validate_custom_job

# A fresh interpreter: reads the table from `root` and says whether aiplatform_v1 was imported.
_READ = (
    "import sys; from pathlib import Path; "
    "from vertex_retrain.backends.local.jobs.field_table_cache import cached_field_table; "
    "table = cached_field_table(Path(sys.argv[1])); "
    "print(len(table), 'google.cloud.aiplatform_v1' in sys.modules)"
)


def test_field_table_json_round_trip_gives_the_table_of_the_protos() -> None:
    table = job_field_table()
    again = table_from_json(json.loads(json.dumps(table_to_json(table))))
    assert dict(again) == dict(table)
    assert again[CUSTOM_JOB].lookup("jobSpec") == table[CUSTOM_JOB].lookup("job_spec")


@pytest.mark.parametrize(
    "data",
    [{}, {CUSTOM_JOB: {"name": "CustomJob"}}, {CUSTOM_JOB: {"name": "x", "fields": [[1, 2]]}}],
)
def test_table_from_json_refuses_a_foreign_shape(data: dict) -> None:
    with pytest.raises(ValueError, match="not a field table"):
        table_from_json(data)


def test_cached_field_table_second_process_reads_it_without_aiplatform(tmp_path: Path) -> None:
    first = subprocess.run(
        [sys.executable, "-c", _READ, str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert first.stdout.split()[1] == "True"  # built from the protos, then written
    assert cache_file(tmp_path).is_file()
    second = subprocess.run(
        [sys.executable, "-c", _READ, str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert second.stdout.split() == [first.stdout.split()[0], "False"]


def test_cached_field_table_replaces_a_damaged_file(tmp_path: Path) -> None:
    path = cache_file(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text('{"half a file', encoding="utf-8")
    assert dict(cached_field_table(tmp_path)) == dict(job_field_table())
    assert table_from_json(json.loads(path.read_text(encoding="utf-8")))


def test_validation_with_the_cached_table_names_an_unknown_field(tmp_path: Path) -> None:
    payload = {
        "displayName": "t",
        "jobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {"machineType": "n1-standard-4", "acceleratorTyp": "X"},
                    "replicaCount": 1,
                    "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/i:1"},
                }
            ]
        },
    }
    cached_field_table(tmp_path)  # written
    problems = validate_custom_job(payload, field_table=cached_field_table(tmp_path))
    unknown = [p for p in problems if "acceleratorTyp" in p.field]
    assert unknown and "acceleratorType" in unknown[0].alternatives


def test_warm_in_background_writes_the_table_once(tmp_path: Path) -> None:
    warm_in_background(tmp_path).join(timeout=60)
    path = cache_file(tmp_path)
    assert dict(table_from_json(json.loads(path.read_text(encoding="utf-8")))) == dict(
        job_field_table()
    )
    written = path.stat().st_mtime_ns
    warm_in_background(tmp_path).join(timeout=60)
    assert path.stat().st_mtime_ns == written  # there already: left as it is


def test_validate_job_with_the_cached_table_agrees_with_the_protos(tmp_path: Path) -> None:
    from vertex_retrain.specs.validate import validate_job, validate_tuning_job

    tuning = {
        "displayName": "t",
        "maxTrialCount": 4,
        "parallelTrialCount": 2,
        "studySpec": {"metrics": [{"metricId": "ndcg", "goal": "MAXIMIZE"}], "paramters": []},
        "trialJobSpec": {"workerPoolSpecs": []},
    }
    table = cached_field_table(tmp_path)
    assert validate_tuning_job(tuning, field_table=table) == validate_tuning_job(tuning)
    assert validate_job(tuning, field_table=table) == validate_job(tuning)
    assert any("paramters" in p.field for p in validate_tuning_job(tuning, field_table=table))


def test_cached_field_table_does_not_read_an_oversized_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vertex_retrain.backends.local.jobs import field_table_cache

    cached_field_table(tmp_path)  # a valid file, then a cap below its size
    monkeypatch.setattr(field_table_cache, "MAX_CACHE_BYTES", 100)
    path = cache_file(tmp_path)
    assert path.stat().st_size > 100
    calls: list[int] = []
    monkeypatch.setattr(
        field_table_cache, "job_field_table", lambda: calls.append(1) or job_field_table()
    )
    assert dict(cached_field_table(tmp_path)) == dict(job_field_table())
    assert calls == [1]  # read from the protos instead of the file


def test_known_tables_pin_the_table_of_the_installed_aiplatform() -> None:
    # Bumping google-cloud-aiplatform (or changing how its protos are read) fails here:
    # add its table's digest to KNOWN_TABLES, or the cache is never trusted for it.
    import importlib.metadata

    from vertex_retrain.backends.local.jobs.field_table_cache import KNOWN_TABLES, table_digest

    version = importlib.metadata.version("google-cloud-aiplatform")
    assert KNOWN_TABLES.get(version) == table_digest(job_field_table())


def _forged() -> dict[str, Any]:
    """A table of the right shape that checks nothing: every scalar takes any JSON value and
    every message is free-form."""
    forged = table_to_json(job_field_table())
    for message in forged.values():
        for field in message["fields"]:
            if field[2] == "scalar":
                field[5] = "any"
            elif field[2] == "message":
                field[2:] = ["opaque", "", field[4], "any"]
    return forged


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _nested(path: Path) -> None:
    path.write_text("[" * 100_000 + "]" * 100_000)


def _forged_file(path: Path) -> None:
    path.write_text(json.dumps(_forged()))
    path.chmod(0o600)


def _writable_by_others(path: Path) -> None:
    path.write_text(json.dumps(table_to_json(job_field_table())))
    path.chmod(0o666)


def _link(path: Path) -> None:
    good = path.with_name("elsewhere.json")
    good.write_text(json.dumps(table_to_json(job_field_table())))
    good.chmod(0o600)
    path.symlink_to(good)


@pytest.mark.parametrize(
    "plant", [_fifo, _nested, _forged_file, _writable_by_others, _link], ids=lambda f: f.__name__
)
def test_cached_field_table_rebuilds_a_file_it_cannot_trust(
    tmp_path: Path, plant: Callable[[Path], None]
) -> None:
    path = cache_file(tmp_path)
    path.parent.mkdir(parents=True)
    plant(path)
    result: list[Any] = []
    reader = threading.Thread(target=lambda: result.append(cached_field_table(tmp_path)))
    reader.daemon = True
    reader.start()
    reader.join(60)
    assert not reader.is_alive(), "reading the cache blocked"
    assert dict(result[0]) == dict(job_field_table())
    info = path.lstat()
    assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == cache_mode()  # replaced


def test_validation_with_a_forged_cache_still_refuses_what_the_protos_refuse(
    tmp_path: Path,
) -> None:
    # The forged table would let an unknown field through and hand a rule `imageUri: 42`.
    path = cache_file(tmp_path)
    path.parent.mkdir(parents=True)
    _forged_file(path)
    payload = {
        "displayName": "t",
        "jobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": {"machineType": "n1-standard-4", "acceleratorTyp": "X"},
                    "replicaCount": 1,
                    "containerSpec": {"imageUri": 42},
                }
            ]
        },
    }
    problems = validate_custom_job(payload, field_table=cached_field_table(tmp_path))
    assert {p.code for p in problems} >= {"unknown-field", "wrong-type"}


@pytest.mark.parametrize(
    "change",
    [
        lambda table: table[CUSTOM_JOB]["fields"][0].__setitem__(0, 7),
        lambda table: table[CUSTOM_JOB]["fields"][0].__setitem__(4, "yes"),
        lambda table: table[CUSTOM_JOB]["fields"][0].__setitem__(5, "anything"),
        lambda table: table.pop("google.cloud.aiplatform.v1.MachineSpec"),
    ],
    ids=["a number for a name", "a text for a flag", "an unknown type", "a missing message"],
)
def test_table_from_json_refuses_parts_of_another_type(change: Callable[[Any], Any]) -> None:
    table = table_to_json(job_field_table())
    change(table)
    with pytest.raises(ValueError, match="not a field table"):
        table_from_json(table)


def test_cached_field_table_neither_reads_nor_writes_a_cache_for_an_unknown_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A release missing from KNOWN_TABLES: no digest to check a file against, so no file.
    from vertex_retrain.backends.local.jobs import field_table_cache

    monkeypatch.setattr(field_table_cache, "KNOWN_TABLES", {})
    path = cache_file(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(_forged()))
    path.chmod(0o600)
    assert dict(cached_field_table(tmp_path)) == dict(job_field_table())
    assert json.loads(path.read_text()) == _forged()  # neither trusted nor replaced
