"""Recall@10 and NDCG@10 of the model next to three references, on the same rows.

Each transaction scored is one query (member, store, time) with one relevant drink, the one
bought; so Recall@10 is the hit rate in the top 10 and NDCG@10 is 1/log2(1 + rank) for a hit.
Every ranker sees only drinks the shop could sell at that moment. The references:

- per-store popularity (`baseline_`): each shop's purchases over the last weeks of training,
  ties broken by chain-wide counts;
- "reorder your usual" (`usual_`): the member's own most bought drinks over the training
  weeks, then the shop's popularity;
- "usual plus recent launches" (`launches_`): usual, with the drinks launched in the last
  `NEW_DRINK_DAYS` days placed right after the member's `LAUNCH_SLOT` most bought drinks
  (among themselves by the shop's popularity);
- "recent usual" (`recent_`): usual over time-decayed counts (a purchase weighs half as much
  every four weeks, `trainer.reference.RECENT_HALF_LIFE_DAYS`), then the shop's popularity:
  habits drift, and last month's order says more than last year's.

Members unseen in training get the popularity answer from the model too, as in serving.

The rank is strict, so results never depend on an unspecified order: a drink scored exactly
as high as the one bought counts as ranked above it (a tied reference scores pessimistically,
not by luck). A target the shop could not sell (scored -inf) is a miss, counted in
`unavailable_target_rows`; with fewer than K drinks available, the cut-off is simply what
is available.

Every ranker is also reported by segment (`SEGMENTS`): `habitual` (rows of known members whose
three most bought drinks are at least `HABITUAL_SHARE` of their training purchases, the drink
not new), `new_drinks` (the drink was launched less than `NEW_DRINK_DAYS` days before the
visit), `other` (the rest), `old_drinks` (habitual and other: every row without a new drink)
and `new_members` (unseen in training).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from trainer.features import UNKNOWN_MEMBER
from trainer.model import CatalogueTensors, score

K = 10
HABITUAL_SHARE = 0.7
NEW_DRINK_DAYS = 42  # the model's novelty buckets 1 and 2
LAUNCH_SLOT = 2  # recent launches go right after this many of the member's most bought drinks
SEGMENTS = ("habitual", "new_drinks", "other", "old_drinks", "new_members")
RANKERS = ("", "baseline_", "usual_", "launches_", "recent_")
"""Metric name prefixes: the model, popularity, usual, usual plus recent launches, recent
usual."""


def popularity_scores(popularity: torch.Tensor, store: torch.Tensor) -> torch.Tensor:
    """Baseline scores (B, D): shop counts plus a chain-wide tie-break below one purchase."""
    chain = popularity.sum(dim=0)
    return popularity[store] + 1e-3 * chain / chain.max().clamp(min=1.0)


def ranking_gains(
    scores: torch.Tensor, target: torch.Tensor, k: int = K
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-row hit@k, NDCG@k gain and target availability, one relevant item per row.

    The rank is strict: every other item scored at least as high as the target ranks above
    it. An unavailable target (scored -inf, or NaN) is a miss whatever the other scores.

    Args:
        scores: (B, D) with -inf for unavailable drinks.
        target: (B,) index of the relevant drink.
        k: cut-off.

    Returns:
        float64 hit (B,), float64 gain (B,), bool available (B,).
    """
    mine = scores.gather(1, target[:, None])
    available = torch.isfinite(mine).squeeze(1)
    ahead = (scores >= mine).sum(dim=1) - 1  # every other item at least as high: strict ties
    rank = (ahead + 1).double()
    hit = available & (rank <= k)
    gain = torch.where(hit, 1.0 / torch.log2(rank + 1.0), torch.zeros_like(rank))
    return hit.double(), gain, available


def segment_masks(
    cat: CatalogueTensors, batch: dict[str, torch.Tensor], member_counts: torch.Tensor
) -> torch.Tensor:
    """Which of `SEGMENTS` each row belongs to: bool (B, len(SEGMENTS)), in that order."""
    counts = member_counts[batch["member"]].double()
    top = counts.topk(min(3, counts.shape[1]), dim=1).values.sum(dim=1)
    new_member = batch["member"] == UNKNOWN_MEMBER
    habitual_member = (top >= HABITUAL_SHARE * counts.sum(dim=1).clamp(min=1.0)) & ~new_member
    age = batch["day"] - cat.drink_launch_day[batch["drink"]]
    new_drink = (age >= 0) & (age < NEW_DRINK_DAYS)
    habitual = habitual_member & ~new_drink
    other = ~habitual & ~new_drink
    return torch.stack([habitual, new_drink, other, ~new_drink, new_member], dim=1)


def launch_scores(
    usual: torch.Tensor,
    counts: torch.Tensor,
    baseline: torch.Tensor,
    recent: torch.Tensor,
) -> torch.Tensor:
    """Usual's scores with recent launches placed after the member's `LAUNCH_SLOT` favourites.

    Args:
        usual: (B, D) usual's scores (counts plus a popularity tie-break below one purchase).
        counts: (B, D) the members' purchase counts.
        baseline: (B, D) the shop's popularity scores (finite).
        recent: (B, D) bool, drinks launched less than `NEW_DRINK_DAYS` days ago.
    """
    slot = min(LAUNCH_SLOT, counts.shape[1])
    # Just below the member's LAUNCH_SLOT-th count: behind those drinks, ahead of the rest.
    below = counts.topk(slot, dim=1).values[:, -1:] - 0.5 if slot else counts[:, :1] * 0
    launch = below + 0.25 * baseline / (baseline.max() + 1.0)
    return torch.where(recent, torch.maximum(usual, launch), usual)


@dataclass(frozen=True)
class RowScores:
    """Per-row results of every ranker on the same rows.

    Attributes:
        hits: float64 (n, len(RANKERS)): hit@K per row and ranker.
        gains: float64 (n, len(RANKERS)): NDCG@K gain per row and ranker.
        segments: bool (n, len(SEGMENTS)).
        unavailable: bool (n,): the row's drink was not available to the model's ranking.
    """

    hits: torch.Tensor
    gains: torch.Tensor
    segments: torch.Tensor
    unavailable: torch.Tensor


@torch.no_grad()
def score_rows(
    model: nn.Module,
    cat: CatalogueTensors,
    rows: dict[str, torch.Tensor],
    popularity: torch.Tensor,
    member_counts: torch.Tensor,
    recent_counts: torch.Tensor,
    chunk: int = 8192,
) -> RowScores:
    """Scores every row with the model and the four references (see the module docstring).

    Args:
        model: the trained recommender (not the DDP wrapper); with a history head, `cat`
            carries the history it reads.
        cat: catalogue tensors.
        rows: rows from `trainer.train.rows_to_tensors`.
        popularity: (stores, drinks) purchase counts from training.
        member_counts: (members + 1, drinks) purchase counts per member vocabulary index.
        recent_counts: (members + 1, drinks) the same, decayed in time.
        chunk: rows scored at once (bounds memory at full scale).
    """
    was_training = model.training
    model.eval()
    n_drinks = popularity.shape[1]
    candidates = torch.arange(n_drinks, device=popularity.device)
    n = int(rows["drink"].shape[0])
    device = popularity.device
    hits = torch.zeros((n, len(RANKERS)), dtype=torch.float64, device=device)
    gains = torch.zeros((n, len(RANKERS)), dtype=torch.float64, device=device)
    segments = torch.zeros((n, len(SEGMENTS)), dtype=torch.bool, device=device)
    unavailable = torch.zeros(n, dtype=torch.bool, device=device)
    for start in range(0, n, chunk):
        part = slice(start, start + chunk)
        batch = {key: value[part] for key, value in rows.items()}
        logits, available = score(model, cat, batch, candidates)
        baseline = popularity_scores(popularity, batch["store"])
        known = (batch["member"] != UNKNOWN_MEMBER)[:, None]
        ranked = torch.where(known, logits.double(), baseline)
        counts = member_counts[batch["member"]].double()
        # Shop popularity is scaled below one purchase so it only breaks the history's ties.
        usual = counts + baseline / (baseline.max() + 1.0)
        age = batch["day"][:, None] - cat.drink_launch_day[None, :]
        recent = (age >= 0) & (age < NEW_DRINK_DAYS)
        launches = launch_scores(usual, counts, baseline, recent)
        lately = recent_counts[batch["member"]].double()
        recent_usual = lately + 1e-6 * baseline / (baseline.max() + 1.0)
        for i, scores in enumerate((ranked, baseline, usual, launches, recent_usual)):
            hit, gain, reachable = ranking_gains(
                scores.masked_fill(~available, float("-inf")), batch["drink"]
            )
            hits[part, i], gains[part, i] = hit, gain
            if i == 0:
                unavailable[part] = ~reachable
        segments[part] = segment_masks(cat, batch, member_counts)
    model.train(was_training)
    return RowScores(hits, gains, segments, unavailable)


def summarize(scored: RowScores) -> dict[str, float]:
    """The metrics of `score_rows`' rows.

    Returns:
        recall_at_10, ndcg_at_10, each reference's (`<prefix>recall_at_10`...), the margins
        over popularity and usual, the relative NDCG lift over popularity, row counts
        (`validation_rows`: the rows scored), and each segment's
        `<ranker><segment>_{recall,ndcg}_at_10` (segments with rows only) and `<segment>_rows`.
    """
    n = int(scored.gains.shape[0])
    recall = scored.hits.mean(dim=0).tolist() if n else [0.0] * len(RANKERS)
    ndcg = scored.gains.mean(dim=0).tolist() if n else [0.0] * len(RANKERS)
    metrics: dict[str, float] = {}
    for i, prefix in enumerate(RANKERS):
        metrics[f"{prefix}recall_at_10"] = recall[i]
        metrics[f"{prefix}ndcg_at_10"] = ndcg[i]
    base_ndcg = metrics["baseline_ndcg_at_10"]
    metrics.update(
        {
            "recall_at_10_margin": recall[0] - recall[1],
            "ndcg_at_10_margin": ndcg[0] - ndcg[1],
            "ndcg_at_10_lift": ndcg[0] / base_ndcg - 1.0 if base_ndcg > 0 else math.inf,
            "recall_at_10_usual_margin": recall[0] - recall[2],
            "ndcg_at_10_usual_margin": ndcg[0] - ndcg[2],
            "validation_rows": float(n),
            "unavailable_target_rows": float(scored.unavailable.sum()),
        }
    )
    for j, segment in enumerate(SEGMENTS):
        inside = scored.segments[:, j]
        count = int(inside.sum())
        metrics[f"{segment}_rows"] = float(count)
        if count == 0:
            continue
        seg_recall = scored.hits[inside].mean(dim=0).tolist()
        seg_ndcg = scored.gains[inside].mean(dim=0).tolist()
        for i, prefix in enumerate(RANKERS):
            metrics[f"{prefix}{segment}_recall_at_10"] = seg_recall[i]
            metrics[f"{prefix}{segment}_ndcg_at_10"] = seg_ndcg[i]
    return metrics


def evaluate(
    model: nn.Module,
    cat: CatalogueTensors,
    rows: dict[str, torch.Tensor],
    popularity: torch.Tensor,
    member_counts: torch.Tensor,
    recent_counts: torch.Tensor,
    chunk: int = 8192,
) -> dict[str, float]:
    """`summarize(score_rows(...))`: the model's and the references' metrics on `rows`."""
    return summarize(score_rows(model, cat, rows, popularity, member_counts, recent_counts, chunk))
