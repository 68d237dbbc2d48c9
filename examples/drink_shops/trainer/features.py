"""Feature encoding shared by training, evaluation and serving (one code path, no skew).

Rows become vocabulary indices plus time features derived from the timestamp alone; the
catalogue becomes per-drink arrays used to mask drinks a shop cannot sell at that moment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from trainer.paths import resolve
from trainer.world import season_of_month

UNKNOWN_MEMBER = 0  # vocabulary index of members unseen in training
NOVELTY_BUCKETS = 4  # 0 not yet launched, 1 launched < 2 weeks ago, 2 < 6 weeks, 3 older


@dataclass(frozen=True)
class Catalogue:
    """Drinks and stores as arrays indexed by vocabulary position."""

    drink_ids: np.ndarray  # int64, sorted
    drink_names: list[str]
    drink_category: np.ndarray  # int64
    drink_cold: np.ndarray  # int64 0/1
    drink_region: np.ndarray  # int64, -1 = nationwide
    drink_launch_day: np.ndarray  # int64 days since 1970-01-01
    store_ids: np.ndarray  # int64, sorted
    store_region: np.ndarray  # int64
    drink_season: np.ndarray  # int64, the only season a drink is sold in; -1 = all year

    @property
    def n_categories(self) -> int:
        """Number of category ids (max + 1)."""
        return int(self.drink_category.max()) + 1

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form for the model artifact."""
        return {
            "drink_ids": self.drink_ids.tolist(),
            "drink_names": self.drink_names,
            "drink_category": self.drink_category.tolist(),
            "drink_cold": self.drink_cold.tolist(),
            "drink_region": self.drink_region.tolist(),
            "drink_launch_day": self.drink_launch_day.tolist(),
            "store_ids": self.store_ids.tolist(),
            "store_region": self.store_region.tolist(),
            "drink_season": self.drink_season.tolist(),
        }

    @classmethod
    def from_json(cls, payload: dict[str, Any]) -> Catalogue:
        """Inverse of `to_json`; a catalogue from before seasonal menus sells all year."""
        arrays = {
            k: np.asarray(v, dtype=np.int64) for k, v in payload.items() if k != "drink_names"
        }
        arrays.setdefault("drink_season", np.full(arrays["drink_ids"].size, -1, dtype=np.int64))
        return cls(drink_names=list(payload["drink_names"]), **arrays)


@dataclass(frozen=True)
class Rows:
    """Encoded transactions; every array has one entry per row."""

    member: np.ndarray  # vocabulary index, UNKNOWN_MEMBER if unseen
    store: np.ndarray
    hour: np.ndarray
    weekday: np.ndarray
    season: np.ndarray
    day: np.ndarray  # days since 1970-01-01, for menus and novelty
    drink: np.ndarray  # vocabulary index of the drink bought

    def __len__(self) -> int:
        return int(self.member.size)


def time_features(seconds: np.ndarray) -> dict[str, np.ndarray]:
    """Hour, weekday (Monday 0), season and day number from naive shop-local epoch seconds.

    Args:
        seconds: int64 seconds since 1970-01-01T00:00 in shop-local time.
    """
    seconds = np.asarray(seconds, dtype=np.int64)
    day = seconds // 86400
    month = day.astype("datetime64[D]").astype("datetime64[M]").astype(np.int64) % 12 + 1
    return {
        "hour": (seconds % 86400) // 3600,
        "weekday": (day + 3) % 7,  # 1970-01-01 was a Thursday
        "season": season_of_month(month).astype(np.int64),
        "day": day,
    }


def lookup(vocabulary: np.ndarray, ids: np.ndarray, offset: int = 0) -> np.ndarray:
    """Vocabulary index (+offset) of each id; -1 where the id is not in the sorted vocabulary."""
    ids = np.asarray(ids, dtype=np.int64)
    if vocabulary.size == 0:
        return np.full(ids.shape, -1, dtype=np.int64)
    pos = np.searchsorted(vocabulary, ids)
    pos_clipped = np.minimum(pos, vocabulary.size - 1)
    found = (pos < vocabulary.size) & (vocabulary[pos_clipped] == ids)
    return np.where(found, pos_clipped + offset, -1)


def availability(
    catalogue: Catalogue, store: np.ndarray, day: np.ndarray, season: np.ndarray
) -> np.ndarray:
    """Which drinks each (store, day) can sell: on the regional menu, launched, in season.

    Args:
        catalogue: the catalogue.
        store: store vocabulary indices, shape (n,).
        day: day numbers, shape (n,).
        season: the day's season (`time_features`), shape (n,).

    Returns:
        bool array (n, drinks).
    """
    region = catalogue.store_region[store][:, None]
    on_menu = (catalogue.drink_region[None, :] == -1) | (catalogue.drink_region[None, :] == region)
    drink_season = catalogue.drink_season[None, :]
    in_season = (drink_season == -1) | (drink_season == np.asarray(season)[:, None])
    launched = catalogue.drink_launch_day[None, :] <= np.asarray(day)[:, None]
    return on_menu & in_season & launched


def read_catalogue(manifest: dict[str, Any]) -> Catalogue:
    """Read drinks and stores named by a dataset manifest."""
    import pyarrow.parquet as pq

    root = resolve(manifest["data_uri"])
    dimensions = manifest["dimensions"]
    drinks = pq.read_table(root / dimensions["drinks"]).sort_by("drink_id")
    stores = pq.read_table(root / dimensions["stores"]).sort_by("store_id")
    launch = drinks.column("launch_date").to_numpy().astype("datetime64[D]").astype(np.int64)
    season = (
        drinks.column("season_id").to_numpy().astype(np.int64)
        if "season_id" in drinks.column_names
        else np.full(drinks.num_rows, -1, dtype=np.int64)  # data from before seasonal menus
    )
    return Catalogue(
        drink_ids=drinks.column("drink_id").to_numpy().astype(np.int64),
        drink_names=[str(name) for name in drinks.column("name").to_pylist()],
        drink_category=drinks.column("category_id").to_numpy().astype(np.int64),
        drink_cold=drinks.column("is_cold").to_numpy(zero_copy_only=False).astype(np.int64),
        drink_region=drinks.column("region_id").to_numpy().astype(np.int64),
        drink_launch_day=launch,
        store_ids=stores.column("store_id").to_numpy().astype(np.int64),
        store_region=stores.column("region_id").to_numpy().astype(np.int64),
        drink_season=season,
    )


def read_columns(manifest: dict[str, Any], part: str) -> dict[str, np.ndarray]:
    """Member, store, drink, epoch seconds and week of a part's rows (`train`, `selection`,
    `gate`); a training dataset's withheld gate part is a ValueError."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from trainer.split import manifest_part

    files = manifest_part(manifest, part)["files"]
    root = resolve(manifest["data_uri"])
    names = ["member_id", "store_id", "drink_id", "timestamp", "week"]
    tables = [pq.read_table(root / rel, columns=names) for rel in files]
    table = pa.concat_tables(tables) if tables else None
    if table is None or table.num_rows == 0:
        raise ValueError(f"the manifest's {part!r} part has no rows; regenerate with more weeks")
    out = {
        name: table.column(name).to_numpy().astype(np.int64)
        for name in names
        if name != "timestamp"
    }
    out["seconds"] = table.column("timestamp").cast(pa.timestamp("s")).cast(pa.int64()).to_numpy()
    return out


def encode_rows(
    columns: dict[str, np.ndarray], member_vocab: np.ndarray, catalogue: Catalogue
) -> Rows:
    """Turn raw columns into vocabulary indices and time features.

    Raises:
        ValueError: a store or drink is missing from the catalogue (data and catalogue disagree).
    """
    store = lookup(catalogue.store_ids, columns["store_id"])
    drink = lookup(catalogue.drink_ids, columns["drink_id"])
    for name, found in (("store_id", store), ("drink_id", drink)):
        if (found < 0).any():
            bad = columns[name][found < 0][:5].tolist()
            raise ValueError(
                f"{name} values {bad} are not in the catalogue; regenerate the dataset"
            )
    member = lookup(member_vocab, columns["member_id"], offset=1)
    member[member < 0] = UNKNOWN_MEMBER
    return Rows(member=member, store=store, drink=drink, **time_features(columns["seconds"]))


def store_popularity(
    rows: Rows, catalogue: Catalogue, weeks: np.ndarray, last_weeks: int
) -> np.ndarray:
    """Purchases per (store, drink) over the last `last_weeks` weeks of `rows`, float64.

    Args:
        rows: encoded training rows.
        catalogue: gives the table's shape.
        weeks: week number of each row.
        last_weeks: how many final weeks to count (recent weeks capture season and launches).
    """
    recent = weeks > weeks.max() - last_weeks
    shape = (catalogue.store_ids.size, catalogue.drink_ids.size)
    flat = rows.store[recent] * shape[1] + rows.drink[recent]
    return np.bincount(flat, minlength=shape[0] * shape[1]).reshape(shape).astype(np.float64)


def member_counts(rows: Rows, n_members: int, n_drinks: int) -> np.ndarray:
    """Purchases per (member index, drink) over all of `rows`, float32, shape (n_members+1, D)."""
    flat = rows.member * n_drinks + rows.drink
    counts = np.bincount(flat, minlength=(n_members + 1) * n_drinks)
    return counts.reshape(n_members + 1, n_drinks).astype(np.float32)
