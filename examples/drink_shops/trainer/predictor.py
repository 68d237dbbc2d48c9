"""Online predictions from an exported artifact: top-k drinks for (member, store, time).

An instance is `{"member_id": 17, "store_id": 3, "timestamp": "2026-07-01T15:00:00"}` with an
optional `"k"` (default 10). The timestamp is the shop's local wall-clock time; an offset, if
given, is ignored, because hour, weekday and season are features of the shop's local time.
Members unseen in training get the shop's popularity ranking, flagged `"fallback": true`.
A model with a history head scores known members with their training purchases, which travel
in the artifact (`history.npz`).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import torch

from trainer.export import load_artifact
from trainer.features import UNKNOWN_MEMBER, lookup, time_features
from trainer.metrics import popularity_scores
from trainer.model import CatalogueTensors, score

DEFAULT_K = 10
_FIELDS = {"member_id", "store_id", "timestamp", "k"}
_EPOCH = dt.datetime(1970, 1, 1)
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class InstanceError(ValueError):
    """An instance the predictor cannot answer; the message names the instance and the field."""


def _integer(instance: dict[str, Any], name: str, where: str) -> int:
    value = instance.get(name)
    # JSON has one number type, and clients that pass numbers through protobuf Structs
    # (KFP parameters, some Vertex SDKs) send 17 as 17.0; an integral float is that integer.
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InstanceError(f"{where}: {name!r} must be an integer, got {value!r}")
    if not _INT64_MIN <= value <= _INT64_MAX:  # ids are int64 in the model's tables
        raise InstanceError(f"{where}: {name!r} must fit in 64 bits, got {value}")
    return value


def parse_instance(instance: Any, where: str, max_k: int) -> tuple[int, int, int, int]:
    """Validate one instance.

    Returns:
        `(member_id, store_id, local epoch seconds, k)`.

    Raises:
        InstanceError: naming what is wrong and what was expected.
    """
    if not isinstance(instance, dict):
        raise InstanceError(
            f"{where}: expected an object with member_id, store_id, timestamp; "
            f"got {type(instance).__name__}"
        )
    unknown = sorted(set(instance) - _FIELDS)
    if unknown:
        raise InstanceError(f"{where}: unknown field(s) {unknown}; allowed: {sorted(_FIELDS)}")
    member, store = _integer(instance, "member_id", where), _integer(instance, "store_id", where)
    stamp = instance.get("timestamp")
    if not isinstance(stamp, str):
        raise InstanceError(
            f"{where}: 'timestamp' must be an ISO 8601 string such as "
            f"'2026-07-01T15:00:00', got {stamp!r}"
        )
    try:
        when = dt.datetime.fromisoformat(stamp).replace(tzinfo=None)
    except ValueError:
        raise InstanceError(
            f"{where}: 'timestamp' {stamp!r} is not ISO 8601 (e.g. '2026-07-01T15:00:00')"
        ) from None
    k = DEFAULT_K if "k" not in instance else _integer(instance, "k", where)
    if not 1 <= k <= max_k:
        raise InstanceError(f"{where}: 'k' must be between 1 and {max_k}, got {k}")
    return member, store, int((when - _EPOCH).total_seconds()), k


class Predictor:
    """Loaded model plus everything needed to answer instances; thread-safe for inference."""

    def __init__(self, model_dir: Path) -> None:
        artifact = load_artifact(model_dir)
        self.model, self.catalogue = artifact.model, artifact.catalogue
        self.member_vocab = artifact.member_vocab
        self.popularity = torch.as_tensor(artifact.popularity)
        self.cat = CatalogueTensors.build(
            self.catalogue, None, torch.device("cpu"), artifact.history
        )
        self.candidates = torch.arange(self.catalogue.drink_ids.size)

    @torch.no_grad()
    def predict(self, instances: list[Any]) -> list[dict[str, Any]]:
        """Answer a batch of instances.

        Args:
            instances: the `instances` list of a Vertex predict request.

        Returns:
            One `{"drinks": [{"drink_id", "name", "score"}...], "fallback": bool}` per instance.

        Raises:
            InstanceError: the first malformed instance, by index; nothing is answered then.
        """
        n_drinks = int(self.candidates.numel())
        parsed = [parse_instance(x, f"instances[{i}]", n_drinks) for i, x in enumerate(instances)]
        if not parsed:
            return []
        members, stores, seconds, ks = (
            np.asarray(col, dtype=np.int64) for col in zip(*parsed, strict=True)
        )
        store = lookup(self.catalogue.store_ids, stores)
        if (store < 0).any():
            i = int(np.flatnonzero(store < 0)[0])
            raise InstanceError(
                f"instances[{i}]: store_id {int(stores[i])} is not in the model's store table"
            )
        member = lookup(self.member_vocab, members, offset=1)
        member[member < 0] = UNKNOWN_MEMBER
        batch = {"member": member, "store": store, **time_features(seconds)}
        tensors = {key: torch.from_numpy(np.ascontiguousarray(v)) for key, v in batch.items()}
        logits, available = score(self.model, self.cat, tensors, self.candidates)
        known = tensors["member"] != UNKNOWN_MEMBER
        fallback = popularity_scores(self.popularity, tensors["store"]).float()
        ranked = torch.where(known[:, None], logits, fallback).masked_fill(
            ~available, float("-inf")
        )
        top = ranked.topk(int(ks.max()), dim=1)
        out = []
        for row in range(len(parsed)):
            drinks: list[dict[str, Any]] = []
            for value, index in zip(
                top.values[row].tolist(), top.indices[row].tolist(), strict=True
            ):
                if len(drinks) == ks[row] or value == float("-inf"):
                    break
                drinks.append(
                    {
                        "drink_id": int(self.catalogue.drink_ids[index]),
                        "name": self.catalogue.drink_names[index],
                        "score": round(float(value), 6),
                    }
                )
            out.append({"drinks": drinks, "fallback": not bool(known[row])})
        return out
