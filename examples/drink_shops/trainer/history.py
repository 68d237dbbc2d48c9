"""Members' purchase history: the per-(member, drink) counts the hybrid model scores with.

In this world most orders are habits: a visit orders one of the member's favourites with a
probability of its own, else a drink chosen by taste and context. The best ranking therefore
mixes each member's own purchases with the two-tower model's context-aware choice, in
probability: the model's score of a drink the member has bought is
log(exp(two-tower logit) + exp(g)), with g a learned function of three features of the
history, log(1 + count), count / member total and log(1 + member total); a drink never bought
keeps its two-tower logit. So only the cells the member bought (about one in five at the
seeds' scale) are computed, which keeps a training step cheap.

Habits drift (favourites change, new drinks become habits), so a model may also read
time-decayed counts (`ModelConfig.history_half_life_days`): two more features,
log(1 + decayed count) and decayed count / the member's decayed total, where a purchase
weighs 2 ** (-age in days / half-life). Such a model's training rows see every feature as of
their own day, from the purchases before it (`trainer.purchase_log`): the counts of the end
of training would describe a later member than the one who ordered then. Evaluation and
serving, which come after the training weeks, read the exported tables: the counts of every
training week and the decayed counts as of the day after them (`as_of_day`), decayed further
to the query's day.

Without decay (half-life 0, and artifacts from before it), training rows see leave-one-out
counts (the row's own purchase taken away), so the feature does not leak the label and its
distribution matches what evaluation and serving see: the full counts of the training weeks,
exported with the model.

Storage: a dense int16 table (members + 1, drinks) in memory, row 0 (unknown members) empty;
counts clip at 32,767, far above any member's count of one drink. In the artifact, the same
table as sparse rows (`history.npz`: `indptr`, `drinks`, `counts`, and `decayed` float32
on the same cells with `decay` = [as_of_day, half_life_days]), about 4 bytes per (member,
drink) pair bought, 8 with decay.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from trainer.purchase_log import PurchaseLog, PurchaseLogTensors, as_of, decay_to

HISTORY_FILE = "history.npz"
HISTORY_FEATURES = 3  # log1p(count), count / total, log1p(total)
DECAY_FEATURES = 2  # log1p(decayed count), decayed count / decayed total
_MAX_COUNT = int(np.iinfo(np.int16).max)


class HistoryFormatError(ValueError):
    """A history file of the wrong shape or type."""


@dataclass(frozen=True)
class MemberHistory:
    """Purchases per (member vocabulary index, drink index), int16 (members + 1, drinks).

    Attributes:
        counts: Over every training week.
        decayed: float32, time-decayed counts as of `as_of_day` (None: no decay).
        as_of_day: The day (days since 1970-01-01) after the training weeks.
        half_life_days: The decay's half-life.
        log: The training purchases in time (training only: as-of features for its rows).
    """

    counts: np.ndarray
    decayed: np.ndarray | None = None
    as_of_day: int = 0
    half_life_days: float = 0.0
    log: PurchaseLog | None = None

    @classmethod
    def from_counts(
        cls,
        counts: np.ndarray,
        decayed: np.ndarray | None = None,
        as_of_day: int = 0,
        half_life_days: float = 0.0,
        log: PurchaseLog | None = None,
    ) -> MemberHistory:
        """From exact counts of any integer or float type (clipped to int16)."""
        return cls(
            np.minimum(counts, _MAX_COUNT).astype(np.int16),
            None if decayed is None else decayed.astype(np.float32),
            as_of_day,
            half_life_days,
            log,
        )

    @property
    def features(self) -> int:
        """Features per cell `history_features` gives."""
        return HISTORY_FEATURES + (DECAY_FEATURES if self.decayed is not None else 0)

    def to_bytes(self) -> bytes:
        """The sparse form written to the artifact (`np.savez`, no pickles)."""
        rows, drinks = np.nonzero(self.counts)
        indptr = np.zeros(self.counts.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=self.counts.shape[0]), out=indptr[1:])
        arrays: dict[str, Any] = {
            "shape": np.asarray(self.counts.shape, dtype=np.int64),
            "indptr": indptr,
            "drinks": drinks.astype(np.int16),
            "counts": self.counts[rows, drinks],
        }
        if self.decayed is not None:
            # The decayed counts sit on the same cells: a drink bought is a drink counted.
            arrays["decayed"] = self.decayed[rows, drinks]
            arrays["decay"] = np.asarray([self.as_of_day, self.half_life_days], np.float64)
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes, n_members: int, n_drinks: int) -> MemberHistory:
        """Inverse of `to_bytes`, checked against the model's sizes.

        Raises:
            HistoryFormatError: missing arrays, wrong types, shapes or indices.
        """
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
                shape, indptr = arrays["shape"], arrays["indptr"]
                drinks, counts = arrays["drinks"], arrays["counts"]
                decayed = arrays["decayed"] if "decayed" in arrays.files else None
                decay = arrays["decay"] if "decay" in arrays.files else None
        except (OSError, ValueError, KeyError, EOFError) as error:
            raise HistoryFormatError(f"{HISTORY_FILE}: not a history file ({error})") from None
        expected = (n_members + 1, n_drinks)
        if shape.tolist() != list(expected):
            raise HistoryFormatError(
                f"{HISTORY_FILE}: shape {shape.tolist()}, expected {list(expected)}"
            )
        if (
            indptr.dtype != np.int64
            or indptr.shape != (expected[0] + 1,)
            or drinks.dtype != np.int16
            or counts.dtype != np.int16
            or drinks.shape != counts.shape
            or drinks.ndim != 1
            or indptr[0] != 0
            or indptr[-1] != drinks.size
            or (np.diff(indptr) < 0).any()
            or (drinks.size and (drinks.min() < 0 or drinks.max() >= n_drinks))
        ):
            raise HistoryFormatError(f"{HISTORY_FILE}: arrays of the wrong type or shape")
        if (decayed is None) != (decay is None) or (
            decayed is not None
            and decay is not None
            and (
                decayed.dtype != np.float32
                or decayed.shape != counts.shape
                or decay.shape != (2,)
                or not np.isfinite(decayed).all()
                or not decay[1] > 0
            )
        ):
            raise HistoryFormatError(f"{HISTORY_FILE}: decayed counts of the wrong type or shape")
        table = np.zeros(expected, dtype=np.int16)
        rows = np.repeat(np.arange(expected[0]), np.diff(indptr))
        table[rows, drinks] = counts
        if decayed is None or decay is None:
            return cls(table)
        decayed_table = np.zeros(expected, dtype=np.float32)
        decayed_table[rows, drinks] = decayed
        return cls(table, decayed_table, int(decay[0]), float(decay[1]))

    def tensors(self, device: torch.device) -> HistoryTensors:
        """The tables, each member's totals and the log (when kept) on `device`."""

        def on_device(table: np.ndarray, dtype: type) -> tuple[torch.Tensor, torch.Tensor]:
            totals = table.sum(axis=1, dtype=dtype)
            return torch.as_tensor(table, device=device), torch.as_tensor(totals, device=device)

        counts, totals = on_device(self.counts, np.int32)
        if self.decayed is None:
            return HistoryTensors(counts, totals)
        decayed, decayed_totals = on_device(self.decayed, np.float32)
        return HistoryTensors(
            counts,
            totals,
            decayed,
            decayed_totals,
            self.as_of_day,
            self.half_life_days,
            None if self.log is None else self.log.tensors(device),
        )


@dataclass(frozen=True)
class HistoryTensors:
    """`MemberHistory` on a device: counts int16 (members + 1, drinks), totals int32, and
    with decay the decayed counts and totals (float32) and the training log."""

    counts: torch.Tensor
    totals: torch.Tensor
    decayed: torch.Tensor | None = None
    decayed_totals: torch.Tensor | None = None
    as_of_day: int = 0
    half_life_days: float = 0.0
    log: PurchaseLogTensors | None = None


def history_features(
    history: HistoryTensors,
    member: torch.Tensor,
    candidates: torch.Tensor,
    leave_out: torch.Tensor | None = None,
    day: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The (visit, candidate) cells whose member bought the drink, and their features.

    Args:
        history: the counts.
        member: member vocabulary indices (B,).
        candidates: drink indices (U,), sorted.
        leave_out: (B,) drink each row bought (among `candidates`), when the rows are
            training rows counted in `history`: without decay, that purchase is taken away
            (leave-one-out), so the label does not leak; with decay, the features are
            computed as of the row's day from the training log instead.
        day: (B,) the rows' days: with decay, the day the features are as of.

    Returns:
        `(cells, features)`: int64 (N,) flat positions `row * U + candidate` in the (B, U)
        score matrix, and float (N, features): `HISTORY_FEATURES`, then `DECAY_FEATURES`
        with decay.
    """
    if history.decayed is not None and history.decayed_totals is not None:
        return _decayed_features(history, member, candidates, leave_out, day)
    counts = history.counts.index_select(0, member).index_select(1, candidates).flatten()
    totals = history.totals.index_select(0, member)
    width = candidates.shape[0]
    if leave_out is not None:
        # `candidates` is sorted (torch.unique's or arange's order): one cell per row.
        bought = torch.searchsorted(candidates, leave_out)
        row = torch.arange(member.shape[0], device=member.device)
        counts.index_add_(0, row * width + bought, torch.full_like(bought, -1, dtype=counts.dtype))
        totals = totals - 1
    # Flat positions and index_select: several times faster on CPU than indexing by pairs.
    cells = torch.nonzero(counts > 0).flatten()
    count = counts.index_select(0, cells).float()
    total = totals.index_select(0, torch.div(cells, width, rounding_mode="floor"))
    total = total.float()
    features = torch.stack([torch.log1p(count), count / total, torch.log1p(total)], dim=1)
    return cells, features


def _decayed_features(
    history: HistoryTensors,
    member: torch.Tensor,
    candidates: torch.Tensor,
    training: torch.Tensor | None,
    day: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """`history_features` with decay: as of each training row's day from the log, else the
    exported tables decayed to the row's day."""
    assert history.decayed is not None and history.decayed_totals is not None
    if day is None:
        raise ValueError("decayed history features need the rows' days")
    n_drinks = history.counts.shape[1]
    if training is not None:
        if history.log is None:
            raise ValueError("training rows need the training log for as-of features")
        counts, decayed = as_of(history.log, member, day, n_drinks, history.half_life_days)
        totals, decayed_totals = counts.sum(dim=1), decayed.sum(dim=1)
        counts, decayed = counts.index_select(1, candidates), decayed.index_select(1, candidates)
    else:
        counts = history.counts.index_select(0, member).index_select(1, candidates).float()
        totals = history.totals.index_select(0, member).float()
        decayed = decay_to(
            history.decayed.index_select(0, member).index_select(1, candidates),
            history.as_of_day,
            day,
            history.half_life_days,
        )
        decayed_totals = decay_to(
            history.decayed_totals.index_select(0, member)[:, None],
            history.as_of_day,
            day,
            history.half_life_days,
        )[:, 0]
    width = candidates.shape[0]
    flat_counts = counts.flatten()
    cells = torch.nonzero(flat_counts > 0).flatten()
    owner = torch.div(cells, width, rounding_mode="floor")
    count = flat_counts.index_select(0, cells)
    total = totals.index_select(0, owner).clamp(min=1.0)
    recent = decayed.flatten().index_select(0, cells)
    recent_total = decayed_totals.index_select(0, owner).clamp(min=1e-12)
    features = torch.stack(
        [torch.log1p(count), count / total, torch.log1p(total), torch.log1p(recent),
         recent / recent_total],
        dim=1,
    )  # fmt: skip
    return cells, features
