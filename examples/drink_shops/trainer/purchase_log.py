"""Each member's training purchases in time, for history features as of a training row's day.

Habits drift, so the history head reads time-decayed counts as well as lifetime ones
(`trainer.history`). A feature computed from every training week would tell a training row
of week 10 what the member bought in week 150: the decayed counts of the end of training
describe a later member than the one who ordered then. So a training row's features are
computed as of its own day, from the purchases strictly before it: this log holds every
training purchase grouped by member (`indptr`) with its drink and day, and `as_of` sums,
for a batch of rows, each member's purchases before the row's day, plain and decayed. The
row's own purchase is never among them: no label leaks, and no leave-one-out is needed.

Evaluation and serving score after the training weeks, where the exported tables (the
counts of every training week, and the decayed counts as of the day after them, decayed
further to the query's day) are exactly these sums.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch


class _Columns(Protocol):
    @property
    def columns(self) -> dict[str, np.ndarray]: ...

    def release_pages(self) -> None: ...

    def __len__(self) -> int: ...


@dataclass(frozen=True)
class PurchaseLog:
    """Training purchases grouped by member vocabulary index.

    Attributes:
        indptr: int64 (members + 2,): member m's purchases are `[indptr[m], indptr[m + 1])`.
        drink: int16 drink index of each purchase.
        day: int32 day (days since 1970-01-01) of each purchase.
    """

    indptr: np.ndarray
    drink: np.ndarray
    day: np.ndarray

    @classmethod
    def build(cls, part: _Columns, n_members: int) -> PurchaseLog:
        """From encoded training rows (`trainer.encoded.EncodedPart`), in one stable sort."""
        member = np.asarray(part.columns["member"])
        order = np.argsort(member, kind="stable")
        indptr = np.zeros(n_members + 2, dtype=np.int64)
        np.cumsum(np.bincount(member, minlength=n_members + 1), out=indptr[1:])
        # Each mapped column's pages are let go once read: the sort order alone is 8 bytes a
        # row, and the columns beside it would add theirs at the peak.
        part.release_pages()
        drink = np.asarray(part.columns["drink"])[order].astype(np.int16)
        part.release_pages()
        day = np.asarray(part.columns["day"])[order].astype(np.int32)
        part.release_pages()
        return cls(indptr=indptr, drink=drink, day=day)

    def tensors(self, device: torch.device) -> PurchaseLogTensors:
        """The log on `device`."""

        def t(values: np.ndarray) -> torch.Tensor:
            return torch.as_tensor(values, device=device)

        return PurchaseLogTensors(t(self.indptr), t(self.drink), t(self.day))


@dataclass(frozen=True)
class PurchaseLogTensors:
    """`PurchaseLog` on a device (on the CPU, sharing the arrays' memory)."""

    indptr: torch.Tensor
    drink: torch.Tensor
    day: torch.Tensor


def as_of(
    log: PurchaseLogTensors,
    member: torch.Tensor,
    day: torch.Tensor,
    n_drinks: int,
    half_life_days: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's member's purchases strictly before the row's day, per drink.

    Args:
        log: the training purchases.
        member: (B,) member vocabulary indices.
        day: (B,) the rows' days.
        n_drinks: width of the tables.
        half_life_days: the decay's half-life.

    Returns:
        `(counts, decayed)`, float32 (B, n_drinks): purchases before the day, and the same
        weighted by 2 ** (-(day - purchase day) / half_life_days).
    """
    starts = log.indptr.index_select(0, member)
    lengths = log.indptr.index_select(0, member + 1) - starts
    rows = member.shape[0]
    total = int(lengths.sum())
    counts = torch.zeros(rows * n_drinks, dtype=torch.float32, device=member.device)
    decayed = torch.zeros_like(counts)
    if total:
        row = torch.repeat_interleave(torch.arange(rows, device=member.device), lengths)
        # Position of each purchase: its member's start plus its rank inside the member.
        offsets = torch.cumsum(lengths, 0) - lengths
        position = starts.index_select(0, row) + (
            torch.arange(total, device=member.device) - offsets.index_select(0, row)
        )
        bought = log.day.index_select(0, position)
        age = day.index_select(0, row) - bought
        before = age > 0
        cell = (row * n_drinks + log.drink.index_select(0, position).long())[before]
        weight = torch.exp2(-age[before].float() / half_life_days)
        counts.index_add_(0, cell, torch.ones_like(weight))
        decayed.index_add_(0, cell, weight)
    return counts.view(rows, n_drinks), decayed.view(rows, n_drinks)


def decay_to(
    decayed: torch.Tensor, from_day: int, day: torch.Tensor, half_life_days: float
) -> torch.Tensor:
    """Decayed counts as of `from_day`, decayed further to each row's `day` (no later day
    than `from_day` is made heavier: a row before it keeps the counts as they are)."""
    gap = (day - from_day).clamp(min=0).float()
    return decayed * torch.exp2(-gap / half_life_days)[:, None]
