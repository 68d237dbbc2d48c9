"""The counts evaluation scores against, streamed from the training Parquet files.

Scoring an exported model needs, from the dataset's training weeks, each shop's recent
purchases (the per-store popularity baseline), each member's purchases ("reorder your
usual") and the same decayed in time ("recent usual": a purchase weighs
2 ** (-age / `RECENT_HALF_LIFE_DAYS`) as of the day after the training weeks). They are
counted here one record batch at a time, reading only the columns they need and mapping ids
through the model's own vocabularies, so memory holds the tables and one batch, never the
history: about 0.5 GB at 500,000 members instead of 143 bytes per row. Members the model does
not know are left out of the member tables (their row 0 stays empty).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import numpy as np

from trainer.encoded import indexer, known_index
from trainer.features import UNKNOWN_MEMBER, Catalogue
from trainer.paths import resolve
from trainer.split import part_weeks

_COLUMNS = ["member_id", "store_id", "drink_id", "week", "timestamp"]
_BATCH_ROWS = 1 << 20
RECENT_HALF_LIFE_DAYS = 28.0
"""The "recent usual" reference's half-life: four weeks."""


@dataclass(frozen=True)
class ReferenceCounts:
    """Counts over a manifest's training rows.

    Attributes:
        popularity: float64 (stores, drinks), purchases in the last `last_weeks` weeks.
        member_counts: int32 (members + 1, drinks), purchases per member vocabulary index.
        recent_counts: float32 (members + 1, drinks), the same decayed in time.
        rows: training rows read.
    """

    popularity: np.ndarray
    member_counts: np.ndarray
    recent_counts: np.ndarray
    rows: int


def count_training_rows(
    manifest: dict[str, Any], member_vocab: np.ndarray, catalogue: Catalogue, last_weeks: int
) -> ReferenceCounts:
    """Stream the manifest's training files and count popularity and members' purchases.

    The same counts as `trainer.part_counts.store_popularity` and
    `trainer.part_counts.member_counts` give over the encoded rows when `member_vocab` is the
    training vocabulary.

    Args:
        manifest: a dataset manifest (`trainer.split`).
        member_vocab: sorted member ids; index i+1 is `member_vocab[i]`.
        catalogue: the model's drinks and stores.
        last_weeks: how many final training weeks the popularity counts.

    Raises:
        ValueError: no training rows, or a store or drink missing from the catalogue.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = resolve(manifest["data_uri"])
    n_stores, n_drinks = catalogue.store_ids.size, catalogue.drink_ids.size
    members, stores, drinks = (
        indexer(member_vocab, offset=1),
        indexer(catalogue.store_ids),
        indexer(catalogue.drink_ids),
    )
    newest = max(part_weeks(manifest, "train"), default=0)
    popularity = np.zeros(n_stores * n_drinks, dtype=np.int64)
    counts = np.zeros((member_vocab.size + 1) * n_drinks, dtype=np.int32)
    decayed = np.zeros(counts.size, dtype=np.float64)
    # As of the day after the last training week (the periods are weeks, named by their Monday).
    last = max(manifest["train"]["periods"], default="1970-01-01")
    as_of_day = (dt.date.fromisoformat(last) - dt.date(1970, 1, 1)).days + 7
    rows = 0
    for rel in manifest["train"]["files"]:
        for batch in pq.ParquetFile(root / rel).iter_batches(_BATCH_ROWS, columns=_COLUMNS):
            raw = {name: batch.column(name).to_numpy().astype(np.int64) for name in _COLUMNS[:4]}
            stamps = batch.column("timestamp").cast(pa.timestamp("s")).cast(pa.int64())
            day = stamps.to_numpy() // 86400
            store = known_index(stores(raw["store_id"]), raw["store_id"], "store_id")
            drink = known_index(drinks(raw["drink_id"]), raw["drink_id"], "drink_id")
            recent = raw["week"] > newest - last_weeks
            popularity += np.bincount(
                store[recent] * n_drinks + drink[recent], minlength=popularity.size
            )
            member = members(raw["member_id"])
            seen = member > UNKNOWN_MEMBER
            # A batch spans every member: sorting its cells beats a table-sized bincount.
            cells, times = np.unique(member[seen] * n_drinks + drink[seen], return_counts=True)
            counts[cells] += times.astype(np.int32)
            weight = np.exp2(-(as_of_day - day[seen]) / RECENT_HALF_LIFE_DAYS)
            decayed += np.bincount(
                member[seen] * n_drinks + drink[seen], weights=weight, minlength=decayed.size
            )
            rows += batch.num_rows
    if rows == 0:
        raise ValueError("the manifest's 'train' part has no rows; regenerate with more weeks")
    return ReferenceCounts(
        popularity=popularity.reshape(n_stores, n_drinks).astype(np.float64),
        member_counts=counts.reshape(member_vocab.size + 1, n_drinks),
        recent_counts=decayed.astype(np.float32).reshape(member_vocab.size + 1, n_drinks),
        rows=rows,
    )
