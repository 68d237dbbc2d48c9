"""The counts evaluation scores against, streamed from the training Parquet files.

Scoring an exported model needs, from the dataset's training weeks, each shop's recent
purchases (the per-store popularity baseline) and each member's purchases ("reorder your
usual"). Both are counted here one record batch at a time, reading only the four columns they
need and mapping ids through the model's own vocabularies, so memory holds the two tables and
one batch, never the history: about 0.3 GB at 500,000 members instead of 143 bytes per row.
Members the model does not know are left out of the member table (its row 0 stays empty).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from trainer.encoded import indexer, known_index
from trainer.features import UNKNOWN_MEMBER, Catalogue
from trainer.paths import resolve
from trainer.split import part_weeks

_COLUMNS = ["member_id", "store_id", "drink_id", "week"]
_BATCH_ROWS = 1 << 20


@dataclass(frozen=True)
class ReferenceCounts:
    """Counts over a manifest's training rows.

    Attributes:
        popularity: float64 (stores, drinks), purchases in the last `last_weeks` weeks.
        member_counts: int32 (members + 1, drinks), purchases per member vocabulary index.
        rows: training rows read.
    """

    popularity: np.ndarray
    member_counts: np.ndarray
    rows: int


def count_training_rows(
    manifest: dict[str, Any], member_vocab: np.ndarray, catalogue: Catalogue, last_weeks: int
) -> ReferenceCounts:
    """Stream the manifest's training files and count popularity and members' purchases.

    The same counts as `trainer.encoded.store_popularity` and `trainer.encoded.member_counts`
    give over the encoded rows when `member_vocab` is the training vocabulary.

    Args:
        manifest: a dataset manifest (`trainer.split`).
        member_vocab: sorted member ids; index i+1 is `member_vocab[i]`.
        catalogue: the model's drinks and stores.
        last_weeks: how many final training weeks the popularity counts.

    Raises:
        ValueError: no training rows, or a store or drink missing from the catalogue.
    """
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
    rows = 0
    for rel in manifest["train"]["files"]:
        for batch in pq.ParquetFile(root / rel).iter_batches(_BATCH_ROWS, columns=_COLUMNS):
            raw = {name: batch.column(name).to_numpy().astype(np.int64) for name in _COLUMNS}
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
            rows += batch.num_rows
    if rows == 0:
        raise ValueError("the manifest's 'train' part has no rows; regenerate with more weeks")
    return ReferenceCounts(
        popularity=popularity.reshape(n_stores, n_drinks).astype(np.float64),
        member_counts=counts.reshape(member_vocab.size + 1, n_drinks),
        rows=rows,
    )
