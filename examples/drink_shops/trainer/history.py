"""Members' purchase history: the per-(member, drink) counts the hybrid model scores with.

In this world most orders are habits: a visit orders one of the member's favourites with a
probability of its own, else a drink chosen by taste and context. The best ranking therefore
mixes each member's own purchases with the two-tower model's context-aware choice, in
probability: the model's score of a drink the member has bought is
log(exp(two-tower logit) + exp(g)), with g a learned function of three features of the
history, log(1 + count), count / member total and log(1 + member total); a drink never bought
keeps its two-tower logit. So only the cells the member bought (about one in five at the
seeds' scale) are computed, which keeps a training step cheap.

Training rows see leave-one-out counts (the row's own purchase taken away), so the feature
does not leak the label and its distribution matches what evaluation and serving see: the
full counts of the training weeks, exported with the model.

Storage: a dense int16 table (members + 1, drinks) in memory, row 0 (unknown members) empty;
counts clip at 32,767, far above any member's count of one drink. In the artifact, the same
table as sparse rows (`history.npz`: `indptr`, `drinks`, `counts`), about 3 bytes per
(member, drink) pair bought: 30 MB at 500,000 members against 96 MB dense.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
import torch

HISTORY_FILE = "history.npz"
HISTORY_FEATURES = 3  # log1p(count), count / total, log1p(total)
_MAX_COUNT = int(np.iinfo(np.int16).max)


class HistoryFormatError(ValueError):
    """A history file of the wrong shape or type."""


@dataclass(frozen=True)
class MemberHistory:
    """Purchases per (member vocabulary index, drink index), int16 (members + 1, drinks)."""

    counts: np.ndarray

    @classmethod
    def from_counts(cls, counts: np.ndarray) -> MemberHistory:
        """From exact counts of any integer or float type (clipped to int16)."""
        return cls(np.minimum(counts, _MAX_COUNT).astype(np.int16))

    def to_bytes(self) -> bytes:
        """The sparse form written to the artifact (`np.savez`, no pickles)."""
        rows, drinks = np.nonzero(self.counts)
        indptr = np.zeros(self.counts.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=self.counts.shape[0]), out=indptr[1:])
        buffer = io.BytesIO()
        np.savez(
            buffer,
            shape=np.asarray(self.counts.shape, dtype=np.int64),
            indptr=indptr,
            drinks=drinks.astype(np.int16),
            counts=self.counts[rows, drinks],
        )
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
        table = np.zeros(expected, dtype=np.int16)
        rows = np.repeat(np.arange(expected[0]), np.diff(indptr))
        table[rows, drinks] = counts
        return cls(table)

    def tensors(self, device: torch.device) -> HistoryTensors:
        """The table and each member's total on `device`."""
        counts = torch.as_tensor(self.counts, device=device)
        totals = torch.as_tensor(self.counts.sum(axis=1, dtype=np.int32), device=device)
        return HistoryTensors(counts, totals)


@dataclass(frozen=True)
class HistoryTensors:
    """`MemberHistory` on a device: counts int16 (members + 1, drinks), totals int32."""

    counts: torch.Tensor
    totals: torch.Tensor


def history_features(
    history: HistoryTensors,
    member: torch.Tensor,
    candidates: torch.Tensor,
    leave_out: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The (visit, candidate) cells whose member bought the drink, and their features.

    Args:
        history: the counts.
        member: member vocabulary indices (B,).
        candidates: drink indices (U,), sorted.
        leave_out: (B,) drink each row bought (among `candidates`), when the rows are
            training rows counted in `history`: that purchase is taken away (leave-one-out),
            so the label does not leak.

    Returns:
        `(cells, features)`: int64 (N,) flat positions `row * U + candidate` in the (B, U)
        score matrix, and float (N, HISTORY_FEATURES).
    """
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
