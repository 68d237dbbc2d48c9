"""Recall@10 and NDCG@10 on the validation week, always next to a per-store popularity baseline.

Each validation transaction is one query (member, store, time) with one relevant drink, the
one bought; so Recall@10 is the hit rate in the top 10 and NDCG@10 is 1/log2(1 + rank) for a
hit. Both rankers see only drinks the shop could sell at that moment. The baseline ranks by
each shop's purchases over the last weeks of training (ties broken by chain-wide counts);
members unseen in training get the baseline's answer from the model too, as in serving.
A second, stronger reference is also reported: "reorder your usual" (the member's own most
bought drinks over all training weeks, then the shop's popularity).

All three are also reported by segment (`SEGMENTS`): habitual members (their three most
bought drinks are at least `HABITUAL_SHARE` of their training purchases), new members (unseen
in training) and new drinks (rows whose drink was launched less than `NEW_DRINK_DAYS` days
before the visit).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from trainer.features import UNKNOWN_MEMBER
from trainer.model import CatalogueTensors, score

K = 10
HABITUAL_SHARE = 0.7
NEW_DRINK_DAYS = 42  # the model's novelty buckets 1 and 2
SEGMENTS = ("habitual", "new_members", "new_drinks")
RANKERS = ("", "baseline_", "usual_")  # metric name prefixes: the model, popularity, usual


def popularity_scores(popularity: torch.Tensor, store: torch.Tensor) -> torch.Tensor:
    """Baseline scores (B, D): shop counts plus a chain-wide tie-break below one purchase."""
    chain = popularity.sum(dim=0)
    return popularity[store] + 1e-3 * chain / chain.max().clamp(min=1.0)


def ranking_gains(
    scores: torch.Tensor, target: torch.Tensor, k: int = K
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-row hit@k and NDCG@k gain for one relevant item per row.

    Args:
        scores: (B, D) with -inf for unavailable drinks.
        target: (B,) index of the relevant drink.
        k: cut-off.
    """
    top = scores.topk(min(k, scores.shape[1]), dim=1).indices
    hits = top == target[:, None]
    discounts = 1.0 / torch.log2(
        torch.arange(2, top.shape[1] + 2, device=scores.device, dtype=torch.float64)
    )
    return hits.any(dim=1).double(), (hits.double() * discounts).sum(dim=1)


def segment_masks(
    cat: CatalogueTensors, batch: dict[str, torch.Tensor], member_counts: torch.Tensor
) -> torch.Tensor:
    """Which of `SEGMENTS` each row belongs to: bool (B, len(SEGMENTS)), in that order."""
    counts = member_counts[batch["member"]].double()
    top = counts.topk(min(3, counts.shape[1]), dim=1).values.sum(dim=1)
    habitual = top >= HABITUAL_SHARE * counts.sum(dim=1).clamp(min=1.0)
    new_member = batch["member"] == UNKNOWN_MEMBER
    age = batch["day"] - cat.drink_launch_day[batch["drink"]]
    new_drink = (age >= 0) & (age < NEW_DRINK_DAYS)
    return torch.stack([habitual & ~new_member, new_member, new_drink], dim=1)


@torch.no_grad()
def evaluate(
    model: nn.Module,
    cat: CatalogueTensors,
    rows: dict[str, torch.Tensor],
    popularity: torch.Tensor,
    member_counts: torch.Tensor,
    chunk: int = 8192,
) -> dict[str, float]:
    """Score the model, the per-store popularity baseline and "usual" on the same rows.

    Args:
        model: the trained recommender (not the DDP wrapper); with a history head, `cat`
            carries the history it reads.
        cat: catalogue tensors.
        rows: validation rows from `trainer.train.rows_to_tensors`.
        popularity: (stores, drinks) purchase counts from training.
        member_counts: (members + 1, drinks) purchase counts per member vocabulary index.
        chunk: rows scored at once (bounds memory at full scale).

    Returns:
        recall_at_10, ndcg_at_10, the baseline's and usual's, absolute margins over both and
        the relative NDCG lift over the baseline, row counts, and each segment's
        `<ranker><segment>_{recall,ndcg}_at_10` (segments with rows only) and `<segment>_rows`.
    """
    was_training = model.training
    model.eval()
    n_drinks = popularity.shape[1]
    candidates = torch.arange(n_drinks, device=popularity.device)
    n = int(rows["drink"].shape[0])
    # Per row: hit and gain of the model, the baseline and usual; then segment membership.
    gains = torch.zeros((n, 2 * len(RANKERS)), dtype=torch.float64, device=popularity.device)
    segments = torch.zeros((n, len(SEGMENTS)), dtype=torch.bool, device=popularity.device)
    for start in range(0, n, chunk):
        batch = {key: value[start : start + chunk] for key, value in rows.items()}
        logits, available = score(model, cat, batch, candidates)
        baseline = popularity_scores(popularity, batch["store"]).masked_fill(
            ~available, float("-inf")
        )
        known = (batch["member"] != UNKNOWN_MEMBER)[:, None]
        ranked = torch.where(
            known, logits.double().masked_fill(~available, float("-inf")), baseline
        )
        # Shop popularity is scaled below one purchase so it only breaks the history's ties.
        usual = member_counts[batch["member"]].double() + baseline / (baseline.max() + 1.0)
        usual = usual.masked_fill(~available, float("-inf"))
        for i, scores in enumerate((ranked, baseline, usual)):
            hit, gain = ranking_gains(scores, batch["drink"])
            gains[start : start + chunk, 2 * i] = hit
            gains[start : start + chunk, 2 * i + 1] = gain
        segments[start : start + chunk] = segment_masks(cat, batch, member_counts)
    model.train(was_training)
    means = gains.mean(dim=0).tolist() if n else [0.0] * gains.shape[1]
    recall, ndcg, base_recall, base_ndcg, usual_recall, usual_ndcg = means
    unknown = int((rows["member"] == UNKNOWN_MEMBER).sum())
    metrics = {
        "recall_at_10": recall,
        "ndcg_at_10": ndcg,
        "baseline_recall_at_10": base_recall,
        "baseline_ndcg_at_10": base_ndcg,
        "recall_at_10_margin": recall - base_recall,
        "ndcg_at_10_margin": ndcg - base_ndcg,
        "ndcg_at_10_lift": ndcg / base_ndcg - 1.0 if base_ndcg > 0 else math.inf,
        "usual_recall_at_10": usual_recall,
        "usual_ndcg_at_10": usual_ndcg,
        "recall_at_10_usual_margin": recall - usual_recall,
        "ndcg_at_10_usual_margin": ndcg - usual_ndcg,
        "validation_rows": float(n),
        "unknown_member_rows": float(unknown),
    }
    for j, segment in enumerate(SEGMENTS):
        inside = gains[segments[:, j]]
        metrics[f"{segment}_rows"] = float(inside.shape[0])
        if inside.shape[0] == 0:
            continue
        values = inside.mean(dim=0).tolist()
        for i, prefix in enumerate(RANKERS):
            metrics[f"{prefix}{segment}_recall_at_10"] = values[2 * i]
            metrics[f"{prefix}{segment}_ndcg_at_10"] = values[2 * i + 1]
    return metrics
