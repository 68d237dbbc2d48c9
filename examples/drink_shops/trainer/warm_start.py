"""Warm start: continue the champion's model on the newest weeks plus a replay of older rows.

The pipeline passes the champion's model folder with `--warm_start_from` (the flag this
package declares in its pyproject.toml, `[tool.vertex-retrain] warm-start-flag`). The new
model is built for this run's members, drinks and stores, then takes the champion's weights:
every tensor whose shape does not depend on the vocabularies is copied; the member, store,
drink and category tables and the drink biases are copied row by row for the ids both know,
and a member or drink the champion never saw keeps its fresh initialisation (it grows the
tables without losing what the champion knew).

Training then steps over the rows of the newest `--warm_start_recent_weeks` weeks and a
`--warm_start_replay_fraction` sample of the older ones, for `--warm_start_epochs` epochs at
`--warm_start_learning_rate` (lower than a full retrain's: at 0.003 against 0.01, over 4
chained weeks at 8,000 members, one seed, the warm line stayed within 0.003 NDCG@10 of the full
retrain where at 0.01 it fell 0.006-0.007 behind): the replay keeps the old weeks in the
gradient, and the smaller steps keep the champion's knowledge. Everything computed from counts
(the members' history, popularity, the purchase-log correction) still reads the whole training
window, which costs a pass of counting, not of training.

A champion that does not fit (another embedding size, a model without the history head) is
not forced: the run trains fully, on every row, and `metrics.json` says why
(`training.warm_start.used` false).
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy loads in the functions: `python -m trainer.task --help` stays light
    import numpy as np

log = logging.getLogger("trainer.warm_start")

DAYS_PER_WEEK = 7
# Tensors indexed by a vocabulary: (table, vocabulary, offset of the first id's row).
_MEMBER_TABLES = ("member.weight",)
_DRINK_TABLES = ("drink.weight", "drink_bias")
_STORE_TABLES = ("store.weight",)
_CATEGORY_TABLES = ("category.weight",)


class WarmStartError(ValueError):
    """The champion's weights do not fit this run's model."""


def add_flags(parser: argparse.ArgumentParser) -> None:
    """The warm-start flags of `python -m trainer.task`."""
    parser.add_argument(
        "--warm_start_from",
        default="",
        help="the champion's model folder (gs://, /gcs/ or local) to continue from; "
        "empty: train from scratch",
    )
    parser.add_argument(
        "--warm_start_recent_weeks",
        type=int,
        default=2,
        help="a warm start trains on the newest this many weeks of the training rows...",
    )
    parser.add_argument(
        "--warm_start_replay_fraction",
        type=float,
        default=0.05,
        help="...plus this share of the older rows, drawn at random (0: none)",
    )
    parser.add_argument("--warm_start_epochs", type=int, default=1, help="epochs of a warm start")
    parser.add_argument(
        "--warm_start_learning_rate",
        type=float,
        default=0.003,
        help="AdamW LR of a warm start, for one replica's batch (instead of --learning_rate)",
    )


def validate_flags(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """One clear line for a bad warm-start flag (`parser.error` exits 2)."""
    if args.warm_start_recent_weeks <= 0:
        parser.error(f"--warm_start_recent_weeks must be > 0, got {args.warm_start_recent_weeks}")
    if not 0.0 <= args.warm_start_replay_fraction <= 1.0:
        parser.error(
            f"--warm_start_replay_fraction must lie in 0..1, got {args.warm_start_replay_fraction}"
        )
    if args.warm_start_epochs <= 0:
        parser.error(f"--warm_start_epochs must be > 0, got {args.warm_start_epochs}")
    if args.warm_start_learning_rate <= 0:
        parser.error(f"--warm_start_learning_rate must be > 0, got {args.warm_start_learning_rate}")


def warm_rows(
    part: Any, recent_weeks: int, replay_fraction: float, seed: int
) -> tuple[Any, dict[str, int]]:
    """The newest `recent_weeks` weeks of `part` plus a seeded `replay_fraction` of the rest.

    The rows are copied out of the mapped part (about 8% of it by default) and its pages
    released, so the warm epoch holds only them: the replay's rows lie all over the part, and
    reading them through the mapping would keep all its pages resident.

    Returns:
        The rows (a `trainer.encoded.EncodedPart` in memory, in the part's order), and how
        many of each (`recent_rows`, `replay_rows`, `older_rows`).
    """
    import numpy as np

    day = part.columns["day"]
    newest = max(int(day[chunk].max()) for chunk in part.chunks())
    cutoff = newest - DAYS_PER_WEEK * recent_weeks + 1
    rng = np.random.default_rng(seed)
    recent: list[np.ndarray] = []
    replay: list[np.ndarray] = []
    older = 0
    for chunk in part.chunks():
        days = np.asarray(day[chunk])
        is_recent = days >= cutoff
        positions = np.arange(chunk.start, chunk.stop, dtype=np.int64)
        recent.append(positions[is_recent])
        old = positions[~is_recent]
        older += int(old.size)
        replay.append(old[rng.random(old.size) < replay_fraction])
    recent_rows, replay_rows = np.concatenate(recent), np.concatenate(replay)
    rows = part.select(np.sort(np.concatenate([recent_rows, replay_rows])))
    part.release_pages()
    counts = {
        "recent_rows": int(recent_rows.size),
        "replay_rows": int(replay_rows.size),
        "older_rows": older,
    }
    return rows, counts


def _row_map(new_ids: np.ndarray, old_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(positions in new, positions in old) of the ids both vocabularies hold."""
    import numpy as np

    _, new_at, old_at = np.intersect1d(new_ids, old_ids, assume_unique=True, return_indices=True)
    return new_at, old_at


@dataclass
class GrowReport:
    """What a warm start kept and what it added."""

    kept: dict[str, int] = field(default_factory=dict)
    added: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form (`metrics.json` `training.warm_start`)."""
        return {"kept": dict(self.kept), "added": dict(self.added)}


def grown_state(
    model: Any,
    champion: Any,
    member_vocab: np.ndarray,
    catalogue: Any,
) -> tuple[dict[str, Any], GrowReport]:
    """This run's model state with the champion's weights copied in.

    Args:
        model: the new model (`trainer.model.DrinkRecommender`), freshly initialised.
        champion: the champion's artifact (`trainer.export.Artifact`).
        member_vocab: this run's members (index i+1 is `member_vocab[i]`).
        catalogue: this run's drinks and stores.

    Raises:
        WarmStartError: a tensor that is not a vocabulary table differs in shape, or the
            two models differ in their heads.
    """
    old_state = champion.model.state_dict()
    state = {key: value.detach().clone() for key, value in model.state_dict().items()}
    if set(old_state) != set(state):
        differ = sorted(set(old_state) ^ set(state))
        raise WarmStartError(f"the champion's model has other parts ({', '.join(differ[:4])})")
    maps = {
        **dict.fromkeys(_MEMBER_TABLES, _member_map(member_vocab, champion.member_vocab)),
        **dict.fromkeys(_DRINK_TABLES, _row_map(catalogue.drink_ids, champion.catalogue.drink_ids)),
        **dict.fromkeys(_STORE_TABLES, _row_map(catalogue.store_ids, champion.catalogue.store_ids)),
    }
    report = GrowReport()
    tables = {*maps, *_CATEGORY_TABLES}
    for key, new in state.items():
        old = old_state[key]
        if new.shape[1:] != old.shape[1:] or (new.shape != old.shape and key not in tables):
            raise WarmStartError(
                f"{key}: the champion's is {tuple(old.shape)}, this run's {tuple(new.shape)} "
                "(other hyperparameters)"
            )
        if key in maps:
            new_at, old_at = maps[key]
            new[new_at] = old[old_at].to(new.dtype)
            report.kept[key] = int(new_at.size)
            report.added[key] = int(new.shape[0] - new_at.size)
        elif key in _CATEGORY_TABLES:
            shared = min(old.shape[0], new.shape[0])
            new[:shared] = old[:shared]
            report.kept[key], report.added[key] = shared, int(new.shape[0] - shared)
        else:
            new.copy_(old)
    return state, report


def _member_map(new_vocab: np.ndarray, old_vocab: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Member rows: index 0 (the unknown member) to 0, then each shared member's row."""
    import numpy as np

    new_at, old_at = _row_map(new_vocab, old_vocab)
    zero = np.zeros(1, dtype=np.int64)
    return np.concatenate([zero, new_at + 1]), np.concatenate([zero, old_at + 1])


def start_from_champion(
    folder: str, model: Any, member_vocab: np.ndarray, catalogue: Any
) -> dict[str, Any]:
    """Loads the champion in `folder` into `model` (in place), or says why it could not.

    Returns:
        `metrics.json`'s `training.warm_start`: `used`, `from`, and the kept and added rows,
        or `why` not.
    """
    from trainer.export import load_artifact
    from trainer.paths import resolve

    try:
        champion = load_artifact(Path(resolve(folder)))
        state, report = grown_state(model, champion, member_vocab, catalogue)
    except (OSError, ValueError) as error:  # ArtifactError and WarmStartError are ValueErrors
        log.warning("warm start from %s refused, training fully: %s", folder, error)
        return {"used": False, "from": folder, "why": str(error)}
    model.load_state_dict(state)
    log.info("warm start from %s: %s", folder, report.to_dict())
    return {"used": True, "from": folder, **report.to_dict()}
