"""Recall@10 and NDCG@10 on the validation week, always next to a per-store popularity baseline.

Each validation transaction is one query (member, store, time) with one relevant drink, the
one bought; so Recall@10 is the hit rate in the top 10 and NDCG@10 is 1/log2(1 + rank) for a
hit. Both rankers see only drinks the shop could sell at that moment. The baseline ranks by
each shop's purchases over the last weeks of training (ties broken by chain-wide counts);
members unseen in training get the baseline's answer from the model too, as in serving.
A second, stronger reference is also reported: "reorder your usual" (the member's own most
bought drinks over all training weeks, then the shop's popularity).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from trainer.features import UNKNOWN_MEMBER
from trainer.model import CatalogueTensors, score

K = 10


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


@torch.no_grad()
def evaluate(
    model: nn.Module,
    cat: CatalogueTensors,
    rows: dict[str, torch.Tensor],
    popularity: torch.Tensor,
    member_counts: torch.Tensor,
    chunk: int = 8192,
) -> dict[str, float]:
    """Score the model and the per-store popularity baseline on the same rows.

    Args:
        model: the trained recommender (not the DDP wrapper).
        cat: catalogue tensors.
        rows: validation rows from `trainer.train.rows_to_tensors`.
        popularity: (stores, drinks) purchase counts from training.
        member_counts: (members + 1, drinks) purchase counts per member vocabulary index.
        chunk: rows scored at once (bounds memory at full scale).

    Returns:
        recall_at_10, ndcg_at_10, the baseline's, absolute margins and relative NDCG lift,
        row counts.
    """
    was_training = model.training
    model.eval()
    n_drinks = popularity.shape[1]
    candidates = torch.arange(n_drinks, device=popularity.device)
    totals = torch.zeros(6, dtype=torch.float64, device=popularity.device)
    n = int(rows["drink"].shape[0])
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
        model_hit, model_gain = ranking_gains(ranked, batch["drink"])
        base_hit, base_gain = ranking_gains(baseline, batch["drink"])
        # Shop popularity is scaled below one purchase so it only breaks the history's ties.
        usual = member_counts[batch["member"]].double() + baseline / (baseline.max() + 1.0)
        usual_hit, usual_gain = ranking_gains(
            usual.masked_fill(~available, float("-inf")), batch["drink"]
        )
        parts = [model_hit, model_gain, base_hit, base_gain, usual_hit, usual_gain]
        totals += torch.stack([part.sum() for part in parts])
    model.train(was_training)
    recall, ndcg, base_recall, base_ndcg, usual_recall, usual_ndcg = (
        float(v) / max(n, 1) for v in totals.tolist()
    )
    unknown = int((rows["member"] == UNKNOWN_MEMBER).sum())
    return {
        "recall_at_10": recall,
        "ndcg_at_10": ndcg,
        "baseline_recall_at_10": base_recall,
        "baseline_ndcg_at_10": base_ndcg,
        "recall_at_10_margin": recall - base_recall,
        "ndcg_at_10_margin": ndcg - base_ndcg,
        "ndcg_at_10_lift": ndcg / base_ndcg - 1.0 if base_ndcg > 0 else math.inf,
        "usual_recall_at_10": usual_recall,
        "usual_ndcg_at_10": usual_ndcg,
        "validation_rows": float(n),
        "unknown_member_rows": float(unknown),
    }
