"""Model artifact and the prediction server's Vertex contract, including bad input."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from data.hostile.support import expect_continue, finish_continued
from guarded_asgi.app import Limits

from trainer.data import generate
from trainer.export import export_model, load_artifact
from trainer.features import (
    encode_rows,
    member_counts,
    read_catalogue,
    read_columns,
    store_popularity,
)
from trainer.history import HISTORY_FILE, MemberHistory
from trainer.model import DrinkRecommender, ModelConfig
from trainer.paths import sha256_file
from trainer.predictor import InstanceError, Predictor
from trainer.serve import RunningServer, ServeConfig, start_server
from trainer.split import plan_time_split
from trainer.world import WorldConfig

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("serving")
    generate(WorldConfig(members=60, stores=6, weeks=3, seed=2), root / "data")
    manifest = plan_time_split(str(root / "data"))
    catalogue = read_catalogue(manifest)
    columns = read_columns(manifest, "train")
    vocab = np.unique(columns["member_id"])
    rows = encode_rows(columns, vocab, catalogue)
    popularity = store_popularity(rows, catalogue, columns["week"], 4)
    torch.manual_seed(0)
    model = DrinkRecommender(
        ModelConfig(
            int(vocab.size), 6, int(catalogue.drink_ids.size), catalogue.n_categories, 8, 16
        )
    )
    history = MemberHistory.from_counts(
        member_counts(rows, int(vocab.size), int(catalogue.drink_ids.size))
    )
    export_model(
        root / "model", model, catalogue, vocab, popularity, {"ndcg_at_10": 0.5}, history=history
    )
    return root / "model"


def _copy(model_dir: Path, to: Path) -> Path:
    to.mkdir()
    for path in model_dir.iterdir():
        (to / path.name).write_bytes(path.read_bytes())
    return to


def _reindex(folder: Path, drop: str = "") -> None:
    """Rewrite artifact.json over the folder's files (a hand-made artifact), leaving out `drop`."""
    index = json.loads((folder / "artifact.json").read_text())
    index["sha256"] = {name: sha256_file(folder / name) for name in index["sha256"] if name != drop}
    (folder / "artifact.json").write_text(json.dumps(index))


@pytest.fixture(scope="module")
def server(model_dir: Path) -> Iterator[RunningServer]:
    with start_server(model_dir, config=ServeConfig(limits=Limits(max_body_bytes=4096))) as running:
        yield running


def _request(
    server: RunningServer,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, Any]]:
    host, port = server.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def _predict(server: RunningServer, payload: Any) -> tuple[int, dict[str, Any]]:
    return _request(
        server,
        "POST",
        "/predict",
        json.dumps(payload).encode(),
        {"Content-Type": "application/json"},
    )


def test_load_artifact_round_trips_weights_and_detects_tampering(
    model_dir: Path, tmp_path: Path
) -> None:
    model, catalogue, members, popularity, history = load_artifact(model_dir)
    assert (
        catalogue.drink_ids.size == model.config.n_drinks and members.size == model.config.n_members
    )
    assert history is not None and history.counts.shape == (
        members.size + 1,
        catalogue.drink_ids.size,
    )
    assert history.counts[1:].sum() > 0 and not history.counts[0].any()
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in model_dir.iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    (copy / "popularity.json").write_text(
        json.dumps({"store_drink_counts": (popularity * 2).tolist()})
    )
    with pytest.raises(ValueError, match=r"popularity\.json: SHA-256"):
        load_artifact(copy)
    (copy / "artifact.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"artifact\.json"):
        load_artifact(copy)


class _NotATensor:
    """Any class: the artifact loader must refuse to rebuild it."""


def test_load_artifact_refuses_weights_holding_objects(model_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in model_dir.iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    torch.save({"payload": _NotATensor()}, copy / "weights.pt")
    index = json.loads((copy / "artifact.json").read_text())
    index["sha256"]["weights.pt"] = sha256_file(copy / "weights.pt")  # hashes alone would pass
    (copy / "artifact.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match="refused to load"):
        load_artifact(copy)


def test_predictor_scores_known_members_with_their_purchase_history(
    model_dir: Path, tmp_path: Path
) -> None:
    copy = _copy(model_dir, tmp_path / "copy")
    weights = torch.load(copy / "weights.pt", weights_only=True)
    weights["history.2.bias"] = torch.tensor([50.0])  # every bought drink far above the rest
    torch.save(weights, copy / "weights.pt")
    _reindex(copy)
    predictor = Predictor(copy)
    history = load_artifact(copy).history
    assert history is not None
    member = int(np.argmax(history.counts.astype(bool).sum(axis=1)))  # the most varied buyer
    bought = set(predictor.catalogue.drink_ids[history.counts[member] > 0].tolist())
    store = int(predictor.catalogue.store_ids[0])
    instance = {"member_id": int(predictor.member_vocab[member - 1]), "store_id": store,
                "timestamp": "2023-01-20T10:00:00", "k": 50}  # fmt: skip
    (answer,) = predictor.predict([instance])
    ranked = [d["drink_id"] for d in answer["drinks"]]
    on_menu_bought = [i for i in ranked if i in bought]
    assert on_menu_bought and ranked[: len(on_menu_bought)] == on_menu_bought


def test_load_artifact_reads_models_without_a_history_head(tmp_path: Path) -> None:
    generate(WorldConfig(members=30, stores=5, weeks=3, seed=4), tmp_path / "data")
    catalogue = read_catalogue(plan_time_split(str(tmp_path / "data")))
    config = ModelConfig(20, 5, int(catalogue.drink_ids.size), catalogue.n_categories, 8, 16, 0)
    popularity = np.ones((5, catalogue.drink_ids.size))
    vocab = np.arange(20)
    export_model(tmp_path / "old", DrinkRecommender(config), catalogue, vocab, popularity, {})
    config_file = json.loads((tmp_path / "old" / "config.json").read_text())
    del config_file["model"]["history_hidden"]  # as written before the head existed
    (tmp_path / "old" / "config.json").write_text(json.dumps(config_file))
    _reindex(tmp_path / "old")
    loaded = load_artifact(tmp_path / "old")
    assert loaded.model.history is None and loaded.history is None
    instance = {"member_id": 3, "store_id": int(catalogue.store_ids[0]),
                "timestamp": "2023-01-04T10:00:00", "k": 3}  # fmt: skip
    assert len(Predictor(tmp_path / "old").predict([instance])[0]["drinks"]) == 3
    with pytest.raises(ValueError, match="history head"):
        export_model(tmp_path / "new", DrinkRecommender(replace(config, history_hidden=4)),
                     catalogue, vocab, popularity, {})  # fmt: skip


def test_load_artifact_refuses_a_history_model_without_its_history(
    model_dir: Path, tmp_path: Path
) -> None:
    unlisted = _copy(model_dir, tmp_path / "unlisted")
    _reindex(unlisted, drop=HISTORY_FILE)
    with pytest.raises(ValueError, match=r"does not list 'history\.npz'"):
        load_artifact(unlisted)
    wrong = _copy(model_dir, tmp_path / "wrong")
    counts = load_artifact(model_dir).history.counts  # type: ignore[union-attr]
    (wrong / HISTORY_FILE).write_bytes(MemberHistory(counts[:-1]).to_bytes())
    _reindex(wrong)
    with pytest.raises(ValueError, match=r"history\.npz: shape"):
        load_artifact(wrong)


def test_server_health_and_predict_contract(server: RunningServer, model_dir: Path) -> None:
    assert _request(server, "GET", "/health") == (200, {"status": "ok"})
    known = int(load_artifact(model_dir)[2][0])
    instances = [
        {"member_id": known, "store_id": 3, "timestamp": "2023-07-01T15:00:00"},
        {"member_id": 10_000_000, "store_id": 3, "timestamp": "2023-07-01T15:00:00", "k": 3},
    ]
    status, body = _predict(server, {"instances": instances})
    assert status == 200
    first, second = body["predictions"]
    assert first["fallback"] is False and len(first["drinks"]) == 10
    assert second["fallback"] is True and len(second["drinks"]) == 3
    scores = [d["score"] for d in first["drinks"]]
    assert scores == sorted(scores, reverse=True)
    assert len({d["drink_id"] for d in first["drinks"]}) == 10 and all(
        d["name"] for d in first["drinks"]
    )
    # The direct predictor answers the same, so the HTTP layer adds nothing and drops nothing.
    assert Predictor(model_dir).predict(instances) == body["predictions"]


def test_predictor_respects_menus_launches_and_popularity_fallback(model_dir: Path) -> None:
    predictor = Predictor(model_dir)
    cat = predictor.catalogue
    store_index = 2
    store_id = int(cat.store_ids[store_index])
    (answer,) = predictor.predict(
        [{"member_id": -5, "store_id": store_id, "timestamp": "2023-01-03T09:00:00", "k": 50}]
    )
    ids = [d["drink_id"] for d in answer["drinks"]]
    day = (np.datetime64("2023-01-03") - np.datetime64("1970-01-01")).astype(int)
    on_menu = ((cat.drink_region == -1) | (cat.drink_region == cat.store_region[store_index])) & (
        cat.drink_launch_day <= day
    )
    assert set(ids) <= set(cat.drink_ids[on_menu].tolist())
    assert len(ids) == min(50, int(on_menu.sum()))
    counts = predictor.popularity[store_index].numpy()
    ranked_counts = [counts[int(np.flatnonzero(cat.drink_ids == i)[0])] for i in ids]
    assert ranked_counts == sorted(ranked_counts, reverse=True)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (
            {"instances": [{"member_id": "7", "store_id": 1, "timestamp": "2023-01-01T10:00:00"}]},
            "instances[0]: 'member_id' must be an integer",
        ),
        (
            {"instances": [{"member_id": 7.5, "store_id": 1, "timestamp": "2023-01-01T10:00:00"}]},
            "instances[0]: 'member_id' must be an integer, got 7.5",
        ),
        (
            {"instances": [{"member_id": 7, "store_id": 1, "timestamp": "yesterday"}]},
            "is not ISO 8601",
        ),
        (
            {"instances": [{"member_id": 7, "store_id": 1}]},
            "'timestamp' must be an ISO 8601 string",
        ),
        (
            {"instances": [{"member_id": 7, "store_id": 999, "timestamp": "2023-01-01T10:00:00"}]},
            "store_id 999 is not in the model",
        ),
        (
            {
                "instances": [
                    {"member_id": 7, "store_id": 1, "timestamp": "2023-01-01T10:00:00", "k": 0}
                ]
            },
            "'k' must be between 1",
        ),
        (
            {
                "instances": [
                    {
                        "member_id": 7,
                        "store_id": 1,
                        "timestamp": "2023-01-01T10:00:00",
                        "colour": "red",
                    }
                ]
            },
            "unknown field(s) ['colour']",
        ),
        ({"instances": [1]}, "instances[0]: expected an object"),
        ({"instance": []}, '{"instances": [...]}'),
        ([1, 2], '{"instances": [...]}'),
    ],
)
def test_server_rejects_malformed_instances_with_400(
    server: RunningServer, payload: Any, message: str
) -> None:
    status, body = _predict(server, payload)
    assert status == 400 and message in body["error"]["message"]
    assert _request(server, "GET", "/health")[0] == 200


def test_server_accepts_integral_floats_as_ids(server: RunningServer) -> None:
    # KFP parameters and protobuf Structs carry every number as a double: 7 arrives as 7.0.
    instance = {"member_id": 7, "store_id": 1, "timestamp": "2023-01-01T10:00:00"}
    as_float = {**instance, "member_id": 7.0, "store_id": 1.0}
    status_int, body_int = _predict(server, {"instances": [instance]})
    status_float, body_float = _predict(server, {"instances": [as_float]})
    assert status_int == status_float == 200
    assert body_float == body_int


def test_server_rejects_invalid_json_oversize_and_unknown_routes(server: RunningServer) -> None:
    status, body = _request(
        server, "POST", "/predict", b"{not json", {"Content-Type": "application/json"}
    )
    assert status == 400 and "not valid JSON" in body["error"]["message"]
    status, body = _request(server, "POST", "/predict", b"x" * 5000)
    assert status == 413 and "the limit is 4096 bytes" in body["error"]["message"]
    assert _request(server, "GET", "/nope")[0] == 404
    assert _request(server, "POST", "/nope", b"{}")[0] == 404
    assert _request(server, "GET", "/predict")[0] == 405
    assert _request(server, "GET", "/health") == (200, {"status": "ok"})


def test_predictor_reports_the_first_bad_instance_by_index(model_dir: Path) -> None:
    good = {"member_id": 1, "store_id": 1, "timestamp": "2023-01-01T10:00:00"}
    with pytest.raises(InstanceError, match=r"instances\[1\]"):
        Predictor(model_dir).predict([good, {**good, "store_id": True}])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_cli_reads_aip_environment_and_finishes_requests_on_sigterm(
    model_dir: Path, tmp_path: Path
) -> None:
    fuse = tmp_path / "fuse"
    (fuse / "bucket").mkdir(parents=True)
    (fuse / "bucket" / "model").symlink_to(model_dir)
    port = _free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "GCS_FUSE_ROOT": str(fuse),
        "AIP_STORAGE_URI": "gs://bucket/model",
        "AIP_HTTP_PORT": str(port),
        "AIP_HEALTH_ROUTE": "/v1/healthz",
        "AIP_PREDICT_ROUTE": "/v1/predict",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainer.serve"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.communicate()[1]
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/v1/healthz")
                health = conn.getresponse()
                assert health.status == 200 and json.loads(health.read()) == {"status": "ok"}
                break
            except ConnectionRefusedError:
                assert time.monotonic() < deadline, "server did not come up"
                time.sleep(0.1)
        body = json.dumps(
            {"instances": [{"member_id": 1, "store_id": 0, "timestamp": "2023-01-10T08:00:00"}]}
        )
        conn.request("POST", "/v1/predict", body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200 and len(json.loads(response.read())["predictions"]) == 1
        conn.close()
        # A request in flight when SIGTERM comes is answered before the server exits.
        in_flight = expect_continue(port, "/v1/predict", len(body))
        proc.send_signal(signal.SIGTERM)
        status, answer = finish_continued(in_flight, body.encode())
        assert status == 200 and len(answer["predictions"]) == 1
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert proc.returncode == 0


def test_serve_cli_fails_clearly_without_a_model(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "AIP_STORAGE_URI"}
    result = subprocess.run(
        [sys.executable, "-m", "trainer.serve", "--model_dir", str(tmp_path)],
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "artifact.json" in result.stderr
