"""Several processes writing the registry at once lose nothing and break no invariant."""

from __future__ import annotations

import multiprocessing
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier, Event
from pathlib import Path

from vertex_retrain.backends.local.model_registry.registry import ModelRegistry

SPEC = {"imageUri": "us-docker.pkg.dev/p/r/serve:1", "command": ["python", "-m", "serve"]}
WORKERS = 4
UPLOADS_PER_WORKER = 12
SHARED_REQUESTS = 3  # every worker races to upload these same request ids


def _writer(db_path: str, worker: int, barrier: Barrier, out: Queue[object]) -> None:
    registry = ModelRegistry(db_path, busy_timeout_s=30)
    created: dict[str, str] = {}
    barrier.wait()
    for index in range(UPLOADS_PER_WORKER):
        request_id = f"w{worker}-{index}"
        version = registry.upload_version(
            "recs",
            artifact_uri=f"gs://b/{request_id}",
            container_spec=SPEC,
            request_id=request_id,
            is_default_version=index % 3 == 0,
        )
        created[request_id] = version.version_id
        registry.set_alias("recs", "champion", version.version_id)
        registry.set_alias("recs", f"worker{worker}", version.version_id)
        if index < SHARED_REQUESTS:
            shared = registry.upload_version(
                "recs",
                artifact_uri=f"gs://b/shared-{index}",
                container_spec=SPEC,
                request_id=f"shared-{index}",
                is_default_version=False,
            )
            created[f"shared-{index}"] = shared.version_id
    out.put((worker, created))


def _reader(db_path: str, stop: Event, out: Queue[object]) -> None:
    """Watch the registry while it is written; report any snapshot breaking an invariant."""
    registry = ModelRegistry(db_path, busy_timeout_s=30)
    problems: list[str] = []
    while not stop.is_set():
        try:
            versions = registry.list_versions("recs")
        except LookupError:
            continue  # model not created yet
        defaults = [v.version_id for v in versions if v.is_default]
        if len(defaults) != 1:
            problems.append(f"default held by {defaults}")
        ids = [int(v.version_id) for v in versions]
        if ids != list(range(1, len(ids) + 1)):
            problems.append(f"version ids {ids}")
    out.put(("reader", problems))


def test_registry_concurrent_process_writers_lose_nothing(tmp_path: Path) -> None:
    db_path = str(tmp_path / "registry.db")
    ModelRegistry(db_path).list_models()  # create the schema before the race
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(WORKERS)
    stop = context.Event()
    out: Queue[object] = context.Queue()
    reader = context.Process(target=_reader, args=(db_path, stop, out))
    writers = [
        context.Process(target=_writer, args=(db_path, w, barrier, out)) for w in range(WORKERS)
    ]
    for process in [reader, *writers]:
        process.start()
    try:
        finished = dict(out.get(timeout=120) for _ in writers)  # type: ignore[misc]
        stop.set()
        reader_problems = out.get(timeout=60)[1]  # type: ignore[index]
    finally:
        stop.set()
        for process in [reader, *writers]:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
    assert [p.exitcode for p in writers] == [0] * WORKERS
    results = [finished[w] for w in range(WORKERS)]

    assert reader_problems == []
    registry = ModelRegistry(db_path)
    versions = registry.list_versions("recs")
    expected = WORKERS * UPLOADS_PER_WORKER + SHARED_REQUESTS
    assert [v.version_id for v in versions] == [str(i) for i in range(1, expected + 1)]
    by_request = {v.request_id: v for v in versions}
    assert len(by_request) == expected  # each request id exactly once
    for created in results:
        for request_id, version_id in created.items():
            assert by_request[request_id].version_id == version_id
            assert by_request[request_id].artifact_uri == f"gs://b/{request_id}"
    # The racing uploads of one shared request id all got the same version back.
    for index in range(SHARED_REQUESTS):
        assert {r[f"shared-{index}"] for r in results} == {by_request[f"shared-{index}"].version_id}
    holders: dict[str, list[str]] = {}
    for version in versions:
        for alias in version.aliases:
            holders.setdefault(alias, []).append(version.version_id)
    assert set(holders) == {"default", "champion"} | {f"worker{w}" for w in range(WORKERS)}
    assert all(len(versions_) == 1 for versions_ in holders.values()), holders
    # Each worker's own alias ends on the last version that worker uploaded.
    for worker, created in enumerate(results):
        last = created[f"w{worker}-{UPLOADS_PER_WORKER - 1}"]
        assert holders[f"worker{worker}"] == [last]
    # champion was moved last by some worker to that worker's final version.
    finals = {r[f"w{w}-{UPLOADS_PER_WORKER - 1}"] for w, r in enumerate(results)}
    assert holders["champion"][0] in finals
