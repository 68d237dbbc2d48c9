"""The aiplatform_v1 field table cached under the local root: the same table, read without
importing aiplatform_v1, and rebuilt when the file is damaged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from vertex_retrain.backends.local.jobs.field_table_cache import (
    cache_file,
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
