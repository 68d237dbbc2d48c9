"""The pre-encoded dataset: compact columns beside the Parquet files, built once, memory-mapped.

Encoding 89 million Parquet rows into vocabulary indices takes most of a cold start, and as
int64 arrays it took 143 bytes per row of memory. `load_or_build` encodes a manifest's train
and selection rows once (training never reads the gate period), streaming one record batch
at a time, into `.npy` columns of the smallest integer type that holds them (17 bytes per
row), and later runs, restarts after a preemption included, map those files instead of
decoding Parquet again.

Layout: `<data_uri>/_encoded/<key>/` with `meta.json` (written last: a folder without it is
incomplete and is rebuilt), `member_vocab.npy` and `<part>.<column>.npy` for the parts `train`
and `selection`. The key hashes the manifest's content hash, its split and `FORMAT`, so new
data, another split or another encoding never reuse stale files. Every file is written under a
temporary name and renamed into place, and the encoding is deterministic, so jobs that build
the same cache at once (tuning trials, replicas) leave the same bytes whichever finishes last.
"""

from __future__ import annotations

import hashlib
import json
import logging
import mmap
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from trainer.features import UNKNOWN_MEMBER, Catalogue, Rows, lookup, time_features
from trainer.paths import atomic_write_json, resolve
from trainer.split import manifest_part

log = logging.getLogger(__name__)
FORMAT = "drinkshop-encoded/v2"
CACHE_DIR = "_encoded"
PARTS = ("train", "selection")
ROW_KEYS = ("member", "store", "hour", "weekday", "season", "day", "drink")  # `Rows` fields
_SOURCE = ["member_id", "store_id", "drink_id", "timestamp", "week"]
_BATCH_ROWS = 262_144  # Parquet rows decoded at once while building
_DENSE_IDS = 1 << 26  # ids below this are indexed through a table instead of a binary search
_CHUNK_ROWS = 1 << 23  # rows per chunk when counting over a whole part


@dataclass(frozen=True)
class EncodedPart:
    """One part's rows as compact columns (possibly memory-mapped), one entry per row."""

    columns: dict[str, np.ndarray]

    def __len__(self) -> int:
        return int(self.columns["drink"].shape[0])

    def take(self, index: np.ndarray, keys: tuple[str, ...] = ROW_KEYS) -> dict[str, np.ndarray]:
        """The rows at `index` as int64 arrays keyed by `keys`."""
        return {key: self.columns[key][index].astype(np.int64) for key in keys}

    def rows(self) -> Rows:
        """All rows as int64 `Rows` (meant for the selection part, which is small)."""
        everything = np.arange(len(self))
        return Rows(**self.take(everything))

    def select(self, positions: np.ndarray) -> EncodedPart:
        """The rows at `positions`, copied into memory (compact columns, same types)."""
        return EncodedPart({name: column[positions] for name, column in self.columns.items()})

    def chunks(self) -> Iterator[slice]:
        """The part's rows a chunk at a time, its mapped pages released after each (see
        :meth:`release_pages`): a pass over 89 million rows holds one chunk's pages, not all."""
        for chunk in _chunks(len(self)):
            yield chunk
            self.release_pages()

    def release_pages(self) -> None:
        """Drops the pages of the memory-mapped columns from this process's resident set.

        The files are read-only and stay in the page cache: a later read maps them again at
        the cost of a minor fault. Without this, a pass over the whole part leaves every page
        resident (1.5 GB at the seeds' scale) beside what training allocates. Columns read into
        memory (Cloud Storage FUSE, :meth:`select`) are left as they are.
        """
        for column in self.columns.values():
            mapped = _mapping_of(column)
            if mapped is not None:
                mapped.madvise(mmap.MADV_DONTNEED)


@dataclass(frozen=True)
class EncodedDataset:
    """A manifest's rows, encoded.

    Attributes:
        folder: the cache folder.
        member_vocab: sorted member ids seen in training; index i+1 is `member_vocab[i]`.
        train: training rows.
        selection: selection rows (members unseen in training are `UNKNOWN_MEMBER`).
        built: True when this call encoded the data, False when it reused the cache.
        seconds: time this call took.
    """

    folder: Path
    member_vocab: np.ndarray
    train: EncodedPart
    selection: EncodedPart
    built: bool
    seconds: float


def cache_key(manifest: dict[str, Any]) -> str:
    """The cache folder name for a manifest: its content, its split and the encoding."""
    identity = {
        "format": FORMAT,
        "content_hash": manifest["content_hash"],
        **{part: list(manifest[part]["files"]) for part in PARTS},
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:20]


def default_cache_root(manifest: dict[str, Any]) -> Path:
    """`<data_uri>/_encoded`: beside the dataset, shared by every run that reads it."""
    return resolve(manifest["data_uri"]) / CACHE_DIR


def load_or_build(
    manifest: dict[str, Any], catalogue: Catalogue, cache_root: Path | None = None
) -> EncodedDataset:
    """Map the encoded rows of `manifest`, encoding them first if no complete cache exists.

    Args:
        manifest: a dataset manifest (`trainer.split`).
        catalogue: the dataset's drinks and stores (`trainer.features.read_catalogue`).
        cache_root: where cache folders live; default `default_cache_root(manifest)`. When it
            cannot be written, the cache goes to a temporary folder for this process.

    Raises:
        ValueError: a part has no rows, or a store or drink is missing from the catalogue.
    """
    began = time.perf_counter()
    folder = (cache_root or default_cache_root(manifest)) / cache_key(manifest)
    loaded = _load(folder)
    built = loaded is None
    if loaded is None:
        try:
            _build(manifest, catalogue, folder)
        except OSError as error:  # a read-only dataset folder: encode for this process only
            folder = Path(tempfile.mkdtemp(prefix="trainer-encoded-")) / folder.name
            log.warning(
                "cannot write the encoded cache beside the data (%s); using %s", error, folder
            )
            _build(manifest, catalogue, folder)
        loaded = _load(folder)
        if loaded is None:
            raise RuntimeError(f"{folder}: the encoded cache was written but does not load")
    vocab, parts = loaded
    seconds = time.perf_counter() - began
    log.info("%s encoded rows from %s in %.1f s", "built" if built else "mapped", folder, seconds)
    return EncodedDataset(folder, vocab, parts["train"], parts["selection"], built, seconds)


def _load(folder: Path) -> tuple[np.ndarray, dict[str, EncodedPart]] | None:
    """The cache in `folder`, or None when it is absent, incomplete or unreadable."""
    meta_path = folder / "meta.json"
    if not meta_path.is_file():
        return None
    # Memory-map local files (the page cache is shared by replicas on one machine); read
    # Cloud Storage FUSE files into memory, where random access would go over the network.
    mode: Any = None if str(folder).startswith("/gcs/") else "r"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT:
            return None
        vocab = np.load(folder / "member_vocab.npy", mmap_mode=mode)
        parts = {}
        for part in PARTS:
            # Plain ndarray views of the maps: np.memmap's own indexing costs ~40 us a call.
            columns = {
                name: np.load(folder / f"{part}.{name}.npy", mmap_mode=mode).view(np.ndarray)
                for name in meta["columns"]
            }
            if any(column.shape != (meta["rows"][part],) for column in columns.values()):
                return None
            parts[part] = EncodedPart(columns)
        return np.asarray(vocab, dtype=np.int64), parts
    except (OSError, ValueError, KeyError) as error:
        log.warning("ignoring the encoded cache in %s: %s", folder, error)
        return None


def _build(manifest: dict[str, Any], catalogue: Catalogue, folder: Path) -> None:
    """Encode both parts into `folder`; `meta.json` goes last."""
    root = resolve(manifest["data_uri"])
    files = {part: [root / rel for rel in manifest_part(manifest, part)["files"]] for part in PARTS}
    folder.mkdir(parents=True, exist_ok=True)
    vocab = _member_vocabulary(files["train"])
    _write_npy(folder / "member_vocab.npy", vocab)
    member_index = indexer(vocab, offset=1)
    store_index = indexer(catalogue.store_ids)
    drink_index = indexer(catalogue.drink_ids)
    dtypes: dict[str, np.dtype[Any]] = {
        "member": np.dtype(np.int32),
        "store": _int_type(catalogue.store_ids.size),
        "drink": _int_type(catalogue.drink_ids.size),
        "hour": np.dtype(np.int8),
        "weekday": np.dtype(np.int8),
        "season": np.dtype(np.int8),
        "day": np.dtype(np.int32),
        "week": np.dtype(np.int16),
    }
    rows = {}
    for part in PARTS:
        rows[part] = sum(_row_count(path) for path in files[part])
        if rows[part] == 0:
            raise ValueError(
                f"the manifest's {part!r} part has no rows; regenerate with more weeks"
            )
        with _ColumnWriter(folder, part, dtypes, rows[part]) as writer:
            for raw in _batches(files[part]):
                member = member_index(raw["member_id"])
                member[member < 0] = UNKNOWN_MEMBER
                writer.append(
                    member=member,
                    store=known_index(store_index(raw["store_id"]), raw["store_id"], "store_id"),
                    drink=known_index(drink_index(raw["drink_id"]), raw["drink_id"], "drink_id"),
                    week=raw["week"],
                    **_time_columns(raw["seconds"]),
                )
    atomic_write_json(
        folder / "meta.json",
        {
            "format": FORMAT,
            "content_hash": manifest["content_hash"],
            "rows": rows,
            "members": int(vocab.size),
            "columns": {name: dtype.name for name, dtype in dtypes.items()},
        },
    )


def _member_vocabulary(paths: list[Path]) -> np.ndarray:
    """Sorted distinct member ids of the given files, reading only that column."""
    import pyarrow.parquet as pq

    seen = np.zeros(0, dtype=bool)
    others: list[np.ndarray] = []  # ids a presence table cannot hold (negative or huge)
    for path in paths:
        ids = pq.read_table(path, columns=["member_id"]).column("member_id").to_numpy()
        ids = ids.astype(np.int64)
        small = (ids >= 0) & (ids < _DENSE_IDS)
        if not small.all():
            others.append(np.unique(ids[~small]))
            ids = ids[small]
        if ids.size and ids.max() >= seen.size:
            seen = np.concatenate([seen, np.zeros(int(ids.max()) + 1 - seen.size, dtype=bool)])
        seen[ids] = True
    return np.union1d(np.flatnonzero(seen), np.concatenate([np.zeros(0, np.int64), *others]))


def indexer(vocabulary: np.ndarray, offset: int = 0) -> Callable[[np.ndarray], np.ndarray]:
    """`ids -> vocabulary index + offset (-1 if absent)`, through a table when ids are small."""
    if vocabulary.size == 0 or vocabulary[0] < 0 or vocabulary[-1] >= _DENSE_IDS:
        return lambda ids: lookup(vocabulary, ids, offset)
    table = np.full(int(vocabulary[-1]) + 1, -1, dtype=np.int64)
    table[vocabulary] = np.arange(vocabulary.size) + offset

    def index(ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64)
        inside = (ids >= 0) & (ids < table.size)
        return np.where(inside, table[np.where(inside, ids, 0)], -1)

    return index


def known_index(index: np.ndarray, ids: np.ndarray, name: str) -> np.ndarray:
    """`index` unchanged; a ValueError naming the ids when any is absent (-1) from the catalogue."""
    if (index < 0).any():
        bad = ids[index < 0][:5].tolist()
        raise ValueError(f"{name} values {bad} are not in the catalogue; regenerate the dataset")
    return index


def _time_columns(seconds: np.ndarray) -> dict[str, np.ndarray]:
    """`trainer.features.time_features`, with the calendar part computed once per day."""
    day = seconds // 86400
    first = int(day.min())
    per_day = time_features(np.arange(first, int(day.max()) + 1, dtype=np.int64) * 86400)
    offset = day - first
    return {
        "hour": (seconds % 86400) // 3600,
        "weekday": per_day["weekday"][offset],
        "season": per_day["season"][offset],
        "day": day,
    }


def _batches(paths: list[Path]) -> Iterator[dict[str, np.ndarray]]:
    """Raw columns of every file, one record batch at a time; timestamps as epoch seconds."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for path in paths:
        for batch in pq.ParquetFile(path).iter_batches(batch_size=_BATCH_ROWS, columns=_SOURCE):
            if batch.num_rows == 0:
                continue
            out = {
                name: batch.column(name).to_numpy().astype(np.int64)
                for name in _SOURCE
                if name != "timestamp"
            }
            stamps = batch.column("timestamp").cast(pa.timestamp("s")).cast(pa.int64())
            out["seconds"] = stamps.to_numpy()
            yield out


def _row_count(path: Path) -> int:
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(path).metadata.num_rows)


def _int_type(size: int) -> np.dtype[Any]:
    """The smallest signed integer type holding 0..size-1."""
    for dtype in (np.int8, np.int16, np.int32):
        if size - 1 <= np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype(np.int64)


class _ColumnWriter:
    """Fills one part's `.npy` columns under temporary names; renames them into place on exit."""

    def __init__(self, folder: Path, part: str, dtypes: dict[str, Any], rows: int) -> None:
        self.final = {name: folder / f"{part}.{name}.npy" for name in dtypes}
        tag = f".{os.getpid()}-{os.urandom(4).hex()}.tmp"
        self.temp = {name: path.with_name(path.name + tag) for name, path in self.final.items()}
        self.arrays = {
            name: np.lib.format.open_memmap(self.temp[name], mode="w+", dtype=dtype, shape=(rows,))
            for name, dtype in dtypes.items()
        }
        self.rows, self.filled = rows, 0

    def __enter__(self) -> _ColumnWriter:
        return self

    def append(self, **columns: np.ndarray) -> None:
        """Write the next rows of every column (all of the same length)."""
        n = len(columns["drink"])
        if self.filled + n > self.rows:
            raise ValueError("the Parquet files hold more rows than their metadata says")
        for name, values in columns.items():
            self.arrays[name][self.filled : self.filled + n] = values
        self.filled += n

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        for array in self.arrays.values():
            array.flush()
        self.arrays.clear()
        complete = kind is None and self.filled == self.rows
        for name, temp in self.temp.items():
            if complete:
                os.replace(temp, self.final[name])
            else:
                temp.unlink(missing_ok=True)
        if kind is None and not complete:
            raise ValueError(
                f"expected {self.rows} rows from the Parquet metadata, read {self.filled}"
            )


def _write_npy(path: Path, array: np.ndarray) -> None:
    temp = path.with_name(f"{path.name}.{os.getpid()}-{os.urandom(4).hex()}.tmp")
    with temp.open("wb") as handle:
        np.save(handle, array, allow_pickle=False)
    os.replace(temp, path)


def _mapping_of(array: np.ndarray) -> mmap.mmap | None:
    """The mmap an array views (through `np.load(mmap_mode=...)`'s memmap), or None."""
    base: Any = array
    while base is not None:
        mapped = getattr(base, "_mmap", None) if isinstance(base, np.memmap) else None
        if isinstance(mapped, mmap.mmap):
            return mapped
        base = getattr(base, "base", None)
    return None


def _chunks(n: int) -> Iterator[slice]:
    for start in range(0, n, _CHUNK_ROWS):
        yield slice(start, min(n, start + _CHUNK_ROWS))
