"""The pre-encoded dataset: same rows as the Parquet encoding, reused, rebuilt when incomplete."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from trainer import encoded, part_counts
from trainer.data import generate, week_file
from trainer.features import (
    encode_rows,
    member_counts,
    read_catalogue,
    read_columns,
    store_popularity,
)
from trainer.split import make_time_split
from trainer.world import WorldConfig


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("encoded")
    generate(WorldConfig(members=250, stores=12, weeks=6, seed=8), root / "data")
    loaded: dict[str, object] = make_time_split(str(root / "data"), str(root / "split"), 1, 1)
    return loaded


def test_encoded_rows_equal_the_parquet_encoding(manifest: dict, tmp_path: Path) -> None:
    catalogue = read_catalogue(manifest)
    data = encoded.load_or_build(manifest, catalogue, tmp_path)
    train_columns = read_columns(manifest, "train")
    vocab = np.unique(train_columns["member_id"])
    train = encode_rows(train_columns, vocab, catalogue)
    selection = encode_rows(read_columns(manifest, "selection"), vocab, catalogue)
    assert np.array_equal(data.member_vocab, vocab)
    for part, reference in ((data.train, train), (data.selection, selection)):
        rows = part.rows()
        for key in encoded.ROW_KEYS:
            assert np.array_equal(getattr(rows, key), getattr(reference, key)), key
    assert data.train.columns["member"].dtype == np.int32
    assert data.train.columns["hour"].dtype == np.int8
    n_stores, n_drinks = catalogue.store_ids.size, catalogue.drink_ids.size
    assert np.array_equal(
        part_counts.store_popularity(data.train, n_stores, n_drinks, 3),
        store_popularity(train, catalogue, train_columns["week"], 3),
    )
    assert np.array_equal(
        part_counts.member_counts(data.train, vocab.size, n_drinks),
        member_counts(train, vocab.size, n_drinks),
    )
    some = np.array([5, 0, 17])
    taken = data.train.take(some, ("drink", "day"))
    assert set(taken) == {"drink", "day"} and taken["drink"].dtype == np.int64
    assert np.array_equal(taken["day"], train.day[some])


def test_encoded_cache_is_reused_and_rebuilt_when_incomplete(
    manifest: dict, tmp_path: Path
) -> None:
    catalogue = read_catalogue(manifest)
    first = encoded.load_or_build(manifest, catalogue, tmp_path)
    again = encoded.load_or_build(manifest, catalogue, tmp_path)
    assert first.built and not again.built and again.folder == first.folder
    assert first.folder.name == encoded.cache_key(manifest)
    assert not list(first.folder.glob("*.tmp"))
    (first.folder / "meta.json").unlink()  # as if the build had been interrupted
    rebuilt = encoded.load_or_build(manifest, catalogue, tmp_path)
    assert rebuilt.built and np.array_equal(
        rebuilt.train.columns["drink"], first.train.columns["drink"]
    )
    np.save(first.folder / "train.drink.npy", np.zeros(3, dtype=np.int16))  # wrong length
    assert encoded.load_or_build(manifest, catalogue, tmp_path).built


def test_encoded_cache_key_changes_with_the_split(manifest: dict) -> None:
    other = {**manifest, "selection": {**manifest["selection"], "files": []}}
    assert encoded.cache_key(other) != encoded.cache_key(manifest)
    assert encoded.default_cache_root(manifest) == Path(manifest["data_uri"]) / "_encoded"


def test_encoded_cache_falls_back_to_a_temp_folder_when_it_cannot_write(
    manifest: dict, tmp_path: Path
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")  # mkdir below it fails, even for root
    data = encoded.load_or_build(manifest, read_catalogue(manifest), blocked / "cache")
    shutil.rmtree(data.folder.parent)  # the fallback folder outlives the process otherwise
    assert data.built and not data.folder.is_relative_to(tmp_path)
    assert len(data.train) == manifest["train"]["rows"]


def test_encoded_cache_refuses_a_drink_missing_from_the_catalogue(
    manifest: dict, tmp_path: Path
) -> None:
    catalogue = read_catalogue(manifest)
    sold = pq.read_table(Path(manifest["data_uri"]) / week_file(0)).column("drink_id")[0].as_py()
    known = catalogue.drink_ids != sold
    smaller = replace(
        catalogue,
        drink_ids=catalogue.drink_ids[known],
        drink_names=[n for n, k in zip(catalogue.drink_names, known, strict=True) if k],
    )
    with pytest.raises(ValueError, match=rf"drink_id values \[{sold}.*\] are not in the catalogue"):
        encoded.load_or_build(manifest, smaller, tmp_path)
    assert not (tmp_path / encoded.cache_key(manifest) / "meta.json").exists()
    assert not list(tmp_path.rglob("*.tmp"))  # no half-written column left behind


def test_encoded_meta_records_rows_and_types(manifest: dict, tmp_path: Path) -> None:
    data = encoded.load_or_build(manifest, read_catalogue(manifest), tmp_path)
    meta = json.loads((data.folder / "meta.json").read_text())
    assert meta["format"] == encoded.FORMAT
    assert meta["rows"] == {"train": len(data.train), "selection": len(data.selection)}
    assert meta["rows"]["train"] == manifest["train"]["rows"]
    assert meta["columns"]["week"] == "int16"


def _resident_kb(path: Path) -> int:
    """This process's resident kB of the mapping of `path`, from /proc/self/smaps."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if "-" in line.split()[0] and not line.endswith(":"):  # a mapping's header line
            inside = line.rstrip().endswith(str(path))
        elif inside and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


def test_encoded_part_release_pages_drops_a_mapped_column_and_keeps_its_values(
    tmp_path: Path,
) -> None:
    path = tmp_path / "train.member.npy"
    np.save(path, np.arange(2_000_000, dtype=np.int32))  # 8 MB: about 2,000 pages
    mapped = np.load(path, mmap_mode="r").view(np.ndarray)
    in_memory = np.arange(10, dtype=np.int32)
    part = encoded.EncodedPart({"member": mapped, "drink": in_memory})
    assert int(mapped.sum()) == 1_999_999 * 1_000_000  # every page read
    assert _resident_kb(path) > 7_000
    part.release_pages()
    assert _resident_kb(path) == 0
    assert int(mapped[1_234_567]) == 1_234_567 and int(in_memory[3]) == 3  # read again


def test_encoded_part_chunks_release_after_each_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(encoded, "_CHUNK_ROWS", 4)
    part = encoded.EncodedPart({"drink": np.arange(10, dtype=np.int8)})
    released: list[int] = []
    monkeypatch.setattr(encoded.EncodedPart, "release_pages", lambda self: released.append(1))
    assert [(c.start, c.stop) for c in part.chunks()] == [(0, 4), (4, 8), (8, 10)]
    assert len(released) == 3


def test_encoded_part_select_copies_the_rows_in_their_types() -> None:
    part = encoded.EncodedPart({"drink": np.arange(10, dtype=np.int8)})
    chosen = part.select(np.asarray([1, 7]))
    assert chosen.columns["drink"].dtype == np.int8 and chosen.columns["drink"].tolist() == [1, 7]
    assert not np.shares_memory(chosen.columns["drink"], part.columns["drink"])  # a copy
