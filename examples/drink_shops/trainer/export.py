"""The self-contained model artifact written to AIP_MODEL_DIR.

Files: `weights.pt` (a state dict of tensors, loadable with `weights_only=True`), `config.json`
(model sizes), `vocab.json` (member ids), `catalogue.json` (drinks, stores, menus, launch days),
`popularity.json` (per-store fallback table), `history.npz` (the members' purchase counts the
history head reads, `trainer.history`; only for a model with that head), `metrics.json`, and
last `artifact.json`, listing every file's SHA-256. A reader that finds no artifact.json knows
the export did not finish.
"""

from __future__ import annotations

import io
import json
import pickle
import re
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch

from trainer.artifact_index import (
    ARTIFACT_FORMAT,
    INDEX_FILE,
    ArtifactError,
    read_bytes,
    read_index,
    verify,
)
from trainer.features import Catalogue
from trainer.history import HISTORY_FILE, MemberHistory
from trainer.model import DrinkRecommender, ModelConfig
from trainer.paths import atomic_write_bytes, atomic_write_json, sha256_file


def export_model(
    model_dir: Path,
    model: DrinkRecommender,
    catalogue: Catalogue,
    member_vocab: np.ndarray,
    popularity: np.ndarray,
    metrics: dict[str, Any],
    history: MemberHistory | None = None,
) -> dict[str, Any]:
    """Write the artifact; every file atomically, the index last.

    Args:
        model_dir: destination (AIP_MODEL_DIR, resolved).
        model: the trained model (not a DDP wrapper).
        catalogue: drinks and stores.
        member_vocab: sorted member ids; member index i+1 is member_vocab[i].
        popularity: (stores, drinks) counts for the fallback.
        metrics: evaluation results.
        history: the members' purchase counts; required when the model has a history head.

    Returns:
        The artifact index (format, file hashes).

    Raises:
        ValueError: a model with a history head but no history.
    """
    if model.config.history_hidden and history is None:
        raise ValueError("the model has a history head: export it with the members' history")
    buffer = io.BytesIO()
    torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()}, buffer)
    atomic_write_bytes(model_dir / "weights.pt", buffer.getvalue())
    atomic_write_json(
        model_dir / "config.json", {"format": ARTIFACT_FORMAT, "model": model.config.to_dict()}
    )
    atomic_write_json(model_dir / "vocab.json", {"member_ids": member_vocab.tolist()})
    atomic_write_json(model_dir / "catalogue.json", catalogue.to_json())
    atomic_write_json(model_dir / "popularity.json", {"store_drink_counts": popularity.tolist()})
    atomic_write_json(model_dir / "metrics.json", metrics)
    names = [
        "weights.pt",
        "config.json",
        "vocab.json",
        "catalogue.json",
        "popularity.json",
        "metrics.json",
    ]
    if model.config.history_hidden and history is not None:
        atomic_write_bytes(model_dir / HISTORY_FILE, history.to_bytes())
        names.append(HISTORY_FILE)
    index = {"format": ARTIFACT_FORMAT, "sha256": {n: sha256_file(model_dir / n) for n in names}}
    atomic_write_json(model_dir / INDEX_FILE, index)
    return index


def _parse_json(name: str, data: bytes) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as error:
        raise ArtifactError(f"{name}: not valid JSON ({error})") from None


def _load_weights(path: Path) -> dict[str, Any]:
    try:
        return dict(torch.load(path, map_location="cpu", weights_only=True))
    except pickle.UnpicklingError as error:
        # torch's own message suggests weights_only=False, which would run the file's code.
        found = re.search(r"Unsupported global: GLOBAL (\S+)", str(error))
        raise ArtifactError(
            f"{path}: refused to load; it holds more than tensors"
            f"{f' (it calls {found.group(1)})' if found else ''}. Re-export the model with "
            "trainer.task; never load it with weights_only=False"
        ) from None


def _check_weights(config: ModelConfig, weights: dict[str, Any]) -> None:
    """The config's sizes against the weights' shapes, on a model built on the meta device
    (shapes only, no memory): a config cannot make the server allocate tables that the
    weights do not hold.

    Raises:
        ArtifactError: naming the first tensor that differs.
    """
    with torch.device("meta"):
        expected = DrinkRecommender(config).state_dict()
    for name in sorted(set(expected) | set(weights)):
        want, got = expected.get(name), weights.get(name)
        if want is None or not isinstance(got, torch.Tensor) or got.shape != want.shape:
            shape = "nothing" if want is None else f"shape {tuple(want.shape)}"
            held = f"shape {tuple(got.shape)}" if isinstance(got, torch.Tensor) else repr(got)
            raise ArtifactError(
                f"weights.pt: {name!r} is {held[:60]}; config.json describes {shape}"
            )


def _check_parts(
    config: ModelConfig, catalogue: Catalogue, members: np.ndarray, popularity: np.ndarray
) -> None:
    """The vocabulary, catalogue and popularity table against the config's sizes, so that no
    request can index past a table.

    Raises:
        ArtifactError: naming the file, the field, its size and the config's.
    """
    drinks = (
        catalogue.drink_ids,
        catalogue.drink_category,
        catalogue.drink_cold,
        catalogue.drink_region,
        catalogue.drink_launch_day,
    )
    sizes = [
        ("vocab.json", "member_ids", members.shape, (config.n_members,)),
        ("catalogue.json", "drink_names", (len(catalogue.drink_names),), (config.n_drinks,)),
        *(("catalogue.json", "drinks", a.shape, (config.n_drinks,)) for a in drinks),
        ("catalogue.json", "store_ids", catalogue.store_ids.shape, (config.n_stores,)),
        ("catalogue.json", "store_region", catalogue.store_region.shape, (config.n_stores,)),
        (
            "popularity.json",
            "store_drink_counts",
            popularity.shape,
            (config.n_stores, config.n_drinks),
        ),
    ]
    for name, field, shape, want in sizes:
        if shape != want:
            raise ArtifactError(f"{name}: {field!r} has shape {shape}; config.json says {want}")
    category, cold = catalogue.drink_category, catalogue.drink_cold
    if (
        category.min() < 0
        or category.max() >= config.n_categories
        or not np.isin(cold, (0, 1)).all()
    ):
        raise ArtifactError(
            f"catalogue.json: drink_category must lie in 0..{config.n_categories - 1} and "
            "drink_cold in 0..1"
        )


class Artifact(NamedTuple):
    """A loaded artifact; `history` is None for a model without a history head."""

    model: DrinkRecommender
    catalogue: Catalogue
    member_vocab: np.ndarray
    popularity: np.ndarray
    history: MemberHistory | None


def load_artifact(model_dir: Path) -> Artifact:
    """Verify and load an artifact.

    The index is schema-checked and every file it lists must be a regular file inside
    `model_dir` (`trainer.artifact_index`); each file's SHA-256 is checked before it is read.

    Returns:
        The `Artifact`; the model is in eval mode on CPU.

    Raises:
        FileNotFoundError: no artifact.json (not a model folder, or the export did not finish).
        ValueError: an `ArtifactError` naming the key or file (bad index, a name outside the
            folder, a hash mismatch, contents of the wrong shape), or weights that hold more
            than tensors.
    """
    files = verify(read_index(model_dir))

    def read(name: str) -> Any:
        return _parse_json(name, read_bytes(files[name], name))

    try:
        config = ModelConfig.from_dict(read("config.json")["model"])
        weights = _load_weights(files["weights.pt"])
        _check_weights(config, weights)  # before the model's tables are allocated
        model = DrinkRecommender(config)
        model.load_state_dict(weights)
        model.eval()
        catalogue = Catalogue.from_json(read("catalogue.json"))
        members = np.asarray(read("vocab.json")["member_ids"], dtype=np.int64)
        popularity = np.asarray(read("popularity.json")["store_drink_counts"], dtype=np.float64)
        _check_parts(config, catalogue, members, popularity)
        history = None
        if model.config.history_hidden:
            if HISTORY_FILE not in files:
                raise ArtifactError(f"{INDEX_FILE}: 'sha256' does not list {HISTORY_FILE!r}")
            history = MemberHistory.from_bytes(
                read_bytes(files[HISTORY_FILE], HISTORY_FILE),
                model.config.n_members,
                model.config.n_drinks,
            )
            if (history.decayed is not None) != bool(model.config.history_half_life_days):
                found = "present" if history.decayed is not None else "missing"
                raise ArtifactError(
                    f"{HISTORY_FILE}: decayed counts {found}, but the model's "
                    f"history_half_life_days is {model.config.history_half_life_days}"
                )
    except ArtifactError:
        raise
    except (
        KeyError,
        TypeError,
        ValueError,
        IndexError,
        OverflowError,
        EOFError,
        RuntimeError,
    ) as error:
        # Hashes only prove the files are the ones indexed; an index written by hand can
        # still list files of the wrong shape.
        detail = " ".join(f"{type(error).__name__}: {error}".split())[:300]
        raise ArtifactError(f"{model_dir}: the files do not form a model ({detail})") from None
    return Artifact(model, catalogue, members, popularity, history)
