"""Hybrid drink recommender and its loss: sampled softmax with log-Q correction.

Query tower: member embedding plus an MLP over (member, store, hour, weekday, season).
Drink tower: drink, category and hot/cold embeddings, plus a per-drink bias and a bias for how
recently the drink was launched: the two-tower logit t = query · drink + biases. History
head: a small MLP g over the member's purchases of the candidate (`trainer.history`); the
score of a drink the member has bought is log(exp(t) + exp(g)), a mixture of habit and
choice in probability, and t otherwise. Drinks a shop cannot sell at that moment (other
region's menu, not launched yet) are masked out everywhere. With `history_hidden` 0
(artifacts from before the head) the score is the two towers' alone.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from trainer.features import NOVELTY_BUCKETS, Catalogue
from trainer.history import (
    DECAY_FEATURES,
    HISTORY_FEATURES,
    HistoryTensors,
    MemberHistory,
    history_features,
)

MAX_SIZE = 2**31 - 1
"""The largest size a model's config may give (a table's rows, a layer's width)."""


@dataclass(frozen=True)
class ModelConfig:
    """Sizes of the model; saved as JSON next to the weights."""

    n_members: int  # known members; index 0 is reserved for unknown members
    n_stores: int
    n_drinks: int
    n_categories: int
    embedding_dim: int = 32
    hidden_dim: int = 64
    history_hidden: int = 16  # width of the history head; 0 = no head
    history_half_life_days: int = 0  # the head also reads decayed counts; 0 = lifetime only

    def to_dict(self) -> dict[str, int]:
        """JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, payload: Any) -> ModelConfig:
        """Inverse of `to_dict`; a config without `history_hidden` predates the head (0), one
        without `history_half_life_days` the decayed counts (0).

        Raises:
            ValueError: not an object of exactly these sizes, each an integer in its range
                (the first problem, naming the key, the value and the range).
        """
        names = [f.name for f in fields(cls)]
        if not isinstance(payload, dict):
            raise ValueError(f"'model' is {type(payload).__name__}; expected an object of {names}")
        values = {"history_hidden": 0, "history_half_life_days": 0, **payload}
        unknown = sorted(set(map(str, values)) - set(names))
        missing = [name for name in names if name not in values]
        if unknown or missing:
            raise ValueError(f"'model' has unknown keys {unknown} or lacks {missing}")
        for name in names:
            lowest = 0 if name in {"history_hidden", "history_half_life_days"} else 1
            value = values[name]
            if type(value) is not int or not lowest <= value <= MAX_SIZE:
                raise ValueError(
                    f"'model.{name}' is {str(value)[:40]}; expected an integer from {lowest} "
                    f"to {MAX_SIZE}"
                )
        return cls(**values)

    @property
    def history_features(self) -> int:
        """Features per cell the history head reads."""
        return HISTORY_FEATURES + (DECAY_FEATURES if self.history_half_life_days else 0)


@dataclass(frozen=True)
class CatalogueTensors:
    """Per-drink and per-store facts the model and loss need, as tensors on one device, and
    the members' purchase history the history head reads."""

    drink_category: torch.Tensor
    drink_cold: torch.Tensor
    drink_region: torch.Tensor
    drink_launch_day: torch.Tensor
    store_region: torch.Tensor
    drink_season: torch.Tensor
    log_q: torch.Tensor  # log of each drink's share of training purchases
    history: HistoryTensors | None = None

    @classmethod
    def build(
        cls,
        catalogue: Catalogue,
        log_q: np.ndarray | None,
        device: torch.device,
        history: MemberHistory | None = None,
    ) -> CatalogueTensors:
        """Move a catalogue (and the history) to `device`; `log_q` may be None where no loss
        is computed, `history` where the model has no history head."""

        def t(values: np.ndarray) -> torch.Tensor:
            return torch.as_tensor(values, device=device)

        if log_q is None:
            log_q = np.zeros(catalogue.drink_ids.size, dtype=np.float32)
        return cls(
            drink_category=t(catalogue.drink_category),
            drink_cold=t(catalogue.drink_cold),
            drink_region=t(catalogue.drink_region),
            drink_launch_day=t(catalogue.drink_launch_day),
            store_region=t(catalogue.store_region),
            drink_season=t(catalogue.drink_season),
            log_q=t(log_q.astype(np.float32)),
            history=None if history is None else history.tensors(device),
        )


def purchase_log_share(drink: np.ndarray, n_drinks: int) -> np.ndarray:
    """log of each drink's (add-one smoothed) share of training purchases: log p_j for log-Q."""
    counts = np.bincount(drink, minlength=n_drinks).astype(np.float64) + 1.0
    return np.log(counts / counts.sum()).astype(np.float32)


class DrinkRecommender(nn.Module):
    """Two-tower recommender; see the module docstring."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        d = config.embedding_dim
        self.config = config
        self.member = nn.Embedding(config.n_members + 1, d)
        self.store = nn.Embedding(config.n_stores, d)
        self.hour = nn.Embedding(24, d)
        self.weekday = nn.Embedding(7, d)
        self.season = nn.Embedding(4, d)
        self.context = nn.Sequential(
            nn.Linear(5 * d, config.hidden_dim), nn.ReLU(), nn.Linear(config.hidden_dim, d)
        )
        self.drink = nn.Embedding(config.n_drinks, d)
        self.category = nn.Embedding(config.n_categories, d)
        self.cold = nn.Embedding(2, d)
        self.drink_bias = nn.Parameter(torch.zeros(config.n_drinks))
        self.novelty_bias = nn.Parameter(torch.zeros(NOVELTY_BUCKETS))
        for table in (self.member, self.store, self.hour, self.weekday, self.season):
            nn.init.normal_(table.weight, std=0.05)
        for table in (self.drink, self.category, self.cold):
            nn.init.normal_(table.weight, std=0.05)
        # Built last, so the towers draw the same initial weights as without the head.
        self.history = (
            nn.Sequential(
                nn.Linear(config.history_features, config.history_hidden),
                nn.ReLU(),
                nn.Linear(config.history_hidden, 1),
            )
            if config.history_hidden
            else None
        )

    def query(
        self,
        member: torch.Tensor,
        store: torch.Tensor,
        hour: torch.Tensor,
        weekday: torch.Tensor,
        season: torch.Tensor,
    ) -> torch.Tensor:
        """Query vectors (B, d) for a batch of visits."""
        m = self.member(member)
        parts = [m, self.store(store), self.hour(hour), self.weekday(weekday), self.season(season)]
        return m + self.context(torch.cat(parts, dim=1))

    def items(
        self, drinks: torch.Tensor, category: torch.Tensor, cold: torch.Tensor
    ) -> torch.Tensor:
        """Drink vectors (U, d) for candidate drinks."""
        return self.drink(drinks) + self.category(category) + self.cold(cold)

    def forward(
        self,
        member: torch.Tensor,
        store: torch.Tensor,
        hour: torch.Tensor,
        weekday: torch.Tensor,
        season: torch.Tensor,
        candidates: torch.Tensor,
        candidate_category: torch.Tensor,
        candidate_cold: torch.Tensor,
        novelty: torch.Tensor,
        history_cells: torch.Tensor | None = None,
        history: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Unmasked scores (B, U) of `candidates` for each visit.

        Args:
            novelty: (B, U) novelty buckets.
            history_cells: (N,) flat positions in the (B, U) scores of the drinks the member
                bought (`trainer.history.history_features`); required with a history head,
                ignored without one.
            history: (N, config.history_features) their features.
        """
        q = self.query(member, store, hour, weekday, season)
        v = self.items(candidates, candidate_category, candidate_cold)
        logits = q @ v.T + self.drink_bias[candidates] + self.novelty_bias[novelty]
        if self.history is None:
            return logits
        if history_cells is None or history is None:
            raise ValueError("this model has a history head: pass the members' history")
        flat = logits.flatten()
        mixed = torch.logaddexp(
            flat.index_select(0, history_cells), self.history(history).squeeze(1)
        )
        return flat.index_copy(0, history_cells, mixed).view_as(logits)


def candidate_context(
    cat: CatalogueTensors,
    store: torch.Tensor,
    day: torch.Tensor,
    season: torch.Tensor,
    candidates: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Availability mask (regional menu, launched, in season) and novelty bucket of each
    candidate for each visit.

    Args:
        cat: catalogue tensors.
        store: store indices (B,).
        day: day numbers (B,).
        season: the visit's season (B,).
        candidates: drink indices (U,).

    Returns:
        `(available, novelty)`, both (B, U): bool, and int64 in [0, NOVELTY_BUCKETS).
    """
    age = day[:, None] - cat.drink_launch_day[candidates][None, :]
    region = cat.drink_region[candidates][None, :]
    drink_season = cat.drink_season[candidates][None, :]
    in_season = (drink_season == -1) | (drink_season == season[:, None])
    available = ((region == -1) | (region == cat.store_region[store][:, None])) & (age >= 0)
    available &= in_season
    novelty = torch.where(
        age < 0, 0, torch.where(age < 14, 1, torch.where(age < 42, 2, NOVELTY_BUCKETS - 1))
    )
    return available, novelty


def score(
    model: nn.Module,
    cat: CatalogueTensors,
    batch: dict[str, torch.Tensor],
    candidates: torch.Tensor,
    leave_out: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Scores (B, U) of `candidates` for a batch of visits, and their availability mask.

    `model` may be a `DrinkRecommender` or a DistributedDataParallel wrapper around one.
    `leave_out` (training rows only): the drinks bought, taken out of the history features.
    """
    available, novelty = candidate_context(
        cat, batch["store"], batch["day"], batch["season"], candidates
    )
    cells, history = (
        (None, None)
        if cat.history is None
        else history_features(cat.history, batch["member"], candidates, leave_out, batch["day"])
    )
    logits = model(
        batch["member"],
        batch["store"],
        batch["hour"],
        batch["weekday"],
        batch["season"],
        candidates,
        cat.drink_category[candidates],
        cat.drink_cold[candidates],
        novelty,
        cells,
        history,
    )
    return logits, available


def sampled_softmax_loss(
    model: nn.Module,
    cat: CatalogueTensors,
    batch: dict[str, torch.Tensor],
    global_drinks: torch.Tensor,
    row_offset: int,
) -> torch.Tensor:
    """In-batch sampled softmax with log-Q correction over the whole global batch's drinks.

    The candidates are the distinct drinks bought anywhere in the global batch (all replicas),
    so each row's negatives are other visits' purchases: popular drinks appear as negatives far
    more often than rare ones. Subtracting log Q(j), the log probability that drink j is among
    the sampled candidates, undoes that bias (Yi et al., RecSys 2019), so the logits estimate
    the full softmax. Candidates the visit's shop could not sell are masked out.

    Args:
        model: the recommender (or its DDP wrapper).
        cat: catalogue tensors (`log_q` holds log purchase shares).
        batch: this replica's rows: member, store, hour, weekday, season, day, drink.
        global_drinks: the drinks of every row of the global batch, replica-major.
        row_offset: where this replica's rows start inside `global_drinks`.

    Returns:
        Mean cross-entropy over this replica's rows.
    """
    candidates, inverse = torch.unique(global_drinks, return_inverse=True)
    target = inverse[row_offset : row_offset + batch["drink"].shape[0]]
    logits, available = score(model, cat, batch, candidates, leave_out=batch["drink"])
    # Q(j) = P(j among G draws) = 1 - (1 - p_j)^G, computed stably in log space.
    g = float(global_drinks.shape[0])
    log_q = torch.log(-torch.expm1(g * torch.log1p(-torch.exp(cat.log_q[candidates]))))
    logits = (logits - log_q).masked_fill(~available, float("-inf"))
    return F.cross_entropy(logits, target)
