"""Local model registry: versions, aliases, idempotent uploads, lineage, and database errors."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from vertex_retrain.backends.local.model_registry.registry import Lineage, ModelRegistry
from vertex_retrain.backends.local.model_registry.registry_db import (
    RegistryCorruptError,
    RegistryError,
    RegistryInputError,
    RegistryLockedError,
    RegistryNotFoundError,
)
from vertex_retrain.backends.local.model_registry.registry_schema import SCHEMA_VERSION, migrate
from vertex_retrain.backends.local.model_registry.registry_tables import (
    models_table,
    versions_table,
)

SPEC = {"imageUri": "us-docker.pkg.dev/p/r/serve:1", "command": ["python", "-m", "serve"]}


def _upload(registry: ModelRegistry, model: str = "recs", **kwargs: object) -> str:
    kwargs.setdefault("artifact_uri", "gs://b/m/1")
    kwargs.setdefault("container_spec", SPEC)
    return registry.upload_version(model, **kwargs).version_id  # type: ignore[arg-type]


def test_registry_default_path_is_under_local_root(registry: ModelRegistry, tmp_path: Path) -> None:
    _upload(registry)
    assert registry.db.path == (tmp_path / "root" / "registry.db").resolve()
    assert registry.db.path.exists()
    with sqlite3.connect(registry.db.path) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_registry_versions_are_numbered_per_model(registry: ModelRegistry) -> None:
    ids = [_upload(registry, "a"), _upload(registry, "a"), _upload(registry, "b")]
    ids.append(_upload(registry, "a"))
    assert ids == ["1", "2", "1", "3"]
    assert [m.display_name for m in registry.list_models()] == ["a", "b"]
    assert registry.get_model("a").version_count == 3
    assert registry.get_model("a").latest_version_id == "3"


def test_registry_first_version_is_default_and_default_moves(registry: ModelRegistry) -> None:
    _upload(registry, is_default_version=False)
    assert registry.get_version("recs").version_id == "1"  # the first is always default
    _upload(registry, is_default_version=False)
    assert registry.get_version("recs", "default").version_id == "1"
    _upload(registry)  # is_default_version=True by default, as in Model.upload
    assert registry.get_version("recs").version_id == "3"
    registry.set_default_version("recs", "2")
    holders = [v.version_id for v in registry.list_versions("recs") if v.is_default]
    assert holders == ["2"]


def test_registry_alias_move_is_atomic_and_unique(registry: ModelRegistry) -> None:
    for _ in range(3):
        _upload(registry)
    registry.set_alias("recs", "champion", "1")
    moved = registry.set_alias("recs", "champion", "@3")
    assert "champion" in moved.aliases
    assert "champion" not in registry.get_version("recs", "1").aliases
    assert registry.get_version("recs", "champion").version_id == "3"
    assert registry.get_model("recs").aliases == {"champion": "3", "default": "3"}


def test_registry_merge_version_aliases_adds_and_removes(registry: ModelRegistry) -> None:
    _upload(registry)
    _upload(registry)
    registry.merge_version_aliases("recs", "1", ["champion", "candidate-2"])
    after = registry.merge_version_aliases("recs", "1", ["-candidate-2", "stable"])
    assert set(after.aliases) == {"champion", "stable"}
    registry.remove_alias("recs", "champion")
    with pytest.raises(RegistryNotFoundError, match="no version with alias 'champion'"):
        registry.get_version("recs", "champion")


def test_registry_default_alias_cannot_be_removed(registry: ModelRegistry) -> None:
    _upload(registry)
    with pytest.raises(RegistryInputError, match="'default' alias cannot be removed"):
        registry.merge_version_aliases("recs", "1", ["-default"])
    with pytest.raises(RegistryInputError, match="cannot be removed"):
        registry.remove_alias("recs", "default")
    assert registry.get_version("recs").version_id == "1"


@pytest.mark.parametrize("alias", ["1", "v", "Champion", "9lives", "bad_alias", "end-", "x" * 129])
def test_registry_invalid_alias_is_rejected_and_changes_nothing(
    registry: ModelRegistry, alias: str
) -> None:
    _upload(registry)
    with pytest.raises(RegistryInputError, match="invalid version alias"):
        registry.merge_version_aliases("recs", "1", ["ok-alias", alias])
    assert registry.get_version("recs", "1").aliases == ("default",)


def test_registry_removing_an_alias_the_version_lacks_is_an_error(registry: ModelRegistry) -> None:
    _upload(registry)
    _upload(registry)
    registry.set_alias("recs", "champion", "2")
    with pytest.raises(RegistryInputError, match="has no alias 'champion' to remove"):
        registry.merge_version_aliases("recs", "1", ["stable", "-champion"])
    assert registry.get_model("recs").aliases == {"champion": "2", "default": "2"}


def test_registry_same_request_id_returns_the_existing_version(registry: ModelRegistry) -> None:
    first = registry.upload_version(
        "recs", artifact_uri="gs://b/m/1", container_spec=SPEC, request_id="run-7/register"
    )
    again = registry.upload_version(
        "recs",
        artifact_uri="gs://b/m/1",
        container_spec=SPEC,
        request_id="run-7/register",
        aliases=["champion"],
    )
    assert again == first
    assert registry.get_model("recs").version_count == 1


def test_registry_request_id_reused_for_other_artifact_is_refused(registry: ModelRegistry) -> None:
    _upload(registry, request_id="k")
    with pytest.raises(RegistryInputError, match="request_id 'k' already created version 1"):
        _upload(registry, request_id="k", artifact_uri="gs://b/other")
    assert registry.get_model("recs").version_count == 1


def test_registry_stores_labels_metrics_lineage_and_spec(registry: ModelRegistry) -> None:
    _upload(registry)
    lineage = Lineage(
        pipeline_run="retrain-20250101",
        dataset_uri="gs://b/data/2025-01",
        dataset_manifest={"rows": 500000, "sha256": "ab12"},
        parent_version="1",
    )
    version = registry.upload_version(
        "recs",
        artifact_uri="gs://b/m/2",
        container_spec={**SPEC, "env": [{"name": "K", "value": "v"}], "predictRoute": "/p"},
        labels={"team": "drinks", "stage": "candidate"},
        metrics={"recall_at_10": 0.41},
        description="weekly retrain",
        lineage=lineage,
        sample_instances=[{"member": 1}],
    )
    stored = registry.get_version("recs", "2")
    assert stored == version
    assert stored.lineage == lineage
    assert stored.labels == {"team": "drinks", "stage": "candidate"}
    assert stored.container_spec["predictRoute"] == "/p"
    assert stored.sample_instances == [{"member": 1}]
    updated = registry.record_evaluation("recs", "2", {"ndcg": 0.3, "recall_at_10": 0.42})
    assert updated.metrics == {"ndcg": 0.3, "recall_at_10": 0.42}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"container_spec": {"command": ["python"]}}, "imageUri"),
        ({"container_spec": {**SPEC, "predict_route": "/p"}}, "unknown field"),
        ({"container_spec": {**SPEC, "env": [{"value": "x"}]}}, "'env' must be a list"),
        ({"labels": {"Team": "x"}}, "invalid label key"),
        ({"metrics": {"auc": float("nan")}}, "finite"),
        ({"aliases": ["default"]}, "is_default_version"),
        ({"lineage": Lineage(parent_version="7")}, "no version 7"),
        ({"artifact_uri": ""}, "artifact_uri"),
    ],
)
def test_registry_bad_upload_is_rejected_and_creates_nothing(
    registry: ModelRegistry, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises((RegistryInputError, RegistryNotFoundError), match=message):
        _upload(registry, "fresh", **kwargs)
    assert registry.list_models() == []


def test_registry_unknown_model_error_lists_known_ones(registry: ModelRegistry) -> None:
    with pytest.raises(RegistryNotFoundError, match=r"'recz'.*known models: none yet$"):
        registry.get_version("recz")
    _upload(registry, "recs")
    _upload(registry, "other")
    with pytest.raises(RegistryNotFoundError, match=r"no model named 'recz'.*: other, recs$"):
        registry.get_version("recz")


def test_registry_corrupt_database_gives_clear_error_and_is_untouched(tmp_path: Path) -> None:
    path = tmp_path / "registry.db"
    garbage = b"this is not sqlite\n" * 200
    path.write_bytes(garbage)
    # Not a file this library made: no advice to move it (it could be anyone's).
    corrupt = r"is not a SQLite database \(corrupt\?\).*It is no registry this library made"
    with pytest.raises(RegistryCorruptError, match=corrupt) as raised:
        ModelRegistry(path).list_models()
    assert "mv " not in str(raised.value)
    with pytest.raises(RegistryCorruptError, match=str(path)):
        _upload(ModelRegistry(path))
    assert path.read_bytes() == garbage


def test_registry_locked_database_gives_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "registry.db"
    _upload(ModelRegistry(path))
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sqlite3, sys, time
                c = sqlite3.connect({str(path)!r}, isolation_level=None)
                c.execute("BEGIN IMMEDIATE")
                print("locked", flush=True)
                sys.stdin.readline()
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        blocked = ModelRegistry(path, busy_timeout_s=0.3)
        with pytest.raises(RegistryLockedError, match=r"locked by another process.*0\.3 s"):
            _upload(blocked)
        assert blocked.get_model("recs").version_count == 1  # WAL: reads still work
    finally:
        holder.communicate("\n", timeout=10)
    assert _upload(ModelRegistry(path)) == "2"


def test_registry_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "registry.db"
    with sqlite3.connect(path) as connection:
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(RegistryError, match="newer than this library understands"):
        ModelRegistry(path).list_models()


def test_registry_old_schema_is_migrated_keeping_data(tmp_path: Path) -> None:
    path = tmp_path / "registry.db"
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("BEGIN IMMEDIATE")
    migrate(connection, target=1)
    connection.execute(
        "INSERT INTO models (display_name, next_version, created_at) VALUES ('old', 1, 't')"
    )
    connection.execute("COMMIT")
    connection.close()
    registry = ModelRegistry(path)
    assert _upload(registry, "old") == "1"
    with sqlite3.connect(path) as check:
        assert check.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert check.execute("SELECT COUNT(*) FROM endpoints").fetchone()[0] == 0


def test_registry_tables_print_models_and_versions(registry: ModelRegistry) -> None:
    _upload(registry, metrics={"auc": 0.8})
    _upload(registry, aliases=["champion"], lineage=Lineage(pipeline_run="run-2"))
    table = models_table()
    assert table.splitlines()[0].split() == [
        "MODEL",
        "VERSIONS",
        "DEFAULT",
        "LATEST",
        "ALIASES",
        "CREATED",
    ]
    assert table.splitlines()[2].split()[:5] == ["recs", "2", "2", "2", "champion=2"]
    rows = versions_table("recs").splitlines()[2:]
    assert rows[0].split()[:4] == ["1", "-", "gs://b/m/1", '{"auc":']
    assert rows[1].split()[:2] == ["2", "default,champion"]
    assert "run-2" in rows[1]
