"""Resuming training from the newest checkpoint that fits this run.

A checkpoint whose SHA-256 sidecar verifies may still hold the wrong things: another model's
tensors, a state an older trainer wrote, or valid tensors arranged by hand. Before anything is
applied, its structure is checked against the live model, optimizer and random generators
(every key, every tensor's shape and dtype, the generators' states tried on scratch
generators), so a checkpoint either restores the whole training state or is skipped with one
log line and the older one is tried: nothing is ever half-applied, and a bad checkpoint never
stops a restart with a traceback.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from trainer.checkpoint import CheckpointManager, capture_rng, restore_rng

STATE_KEYS = ("step", "model", "optimizer", "rng", "history")
_SLACK_BYTES = 64 << 20  # generators, history and pickle framing


@dataclass(frozen=True)
class Resumed:
    """Where a resumed run starts.

    Attributes:
        step: the step the checkpoint was saved at.
        history: its loss history, `[step, loss]` pairs.
    """

    step: int
    history: list[list[float]]


def _tensor_bytes(value: Any) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, Mapping):
        return sum(_tensor_bytes(item) for item in value.values())
    if isinstance(value, list | tuple):
        return sum(_tensor_bytes(item) for item in value)
    return 0


def checkpoint_bound(model: nn.Module, optimizer: Any) -> int:
    """The most bytes a checkpoint of this run may have: the model's and optimizer's tensors
    twice over, plus 64 MiB for the rest."""
    return 2 * _tensor_bytes([model.state_dict(), optimizer.state_dict()]) + _SLACK_BYTES


def _mismatch(where: str, expected: str, value: Any) -> ValueError:
    shown = f"a tensor of shape {tuple(value.shape)} and {value.dtype}"
    shown = shown if isinstance(value, torch.Tensor) else f"a {type(value).__name__}"
    return ValueError(f"{where} is {shown}; this run expects {expected}")


def _match(value: Any, like: Any, where: str) -> None:
    """Raises ValueError at the first place `value` differs in structure from `like`."""
    if isinstance(like, torch.Tensor):
        if (
            not isinstance(value, torch.Tensor)
            or value.shape != like.shape
            or value.dtype != like.dtype
        ):
            raise _mismatch(where, f"a tensor of shape {tuple(like.shape)} and {like.dtype}", value)
    elif isinstance(like, Mapping):
        if not isinstance(value, Mapping) or set(value) != set(like):
            keys = ", ".join(map(str, sorted(like)[:6])) + (", ..." if len(like) > 6 else "")
            found = sorted(map(str, value))[:6] if isinstance(value, Mapping) else None
            raise ValueError(f"{where} has the keys {found}; this run expects {keys}")
        for key, item in like.items():
            _match(value[key], item, f"{where}.{key}")
    elif isinstance(like, list | tuple):
        if not isinstance(value, list | tuple) or len(value) != len(like):
            raise _mismatch(where, f"a list of {len(like)}", value)
        for index, (item, template) in enumerate(zip(value, like, strict=True)):
            _match(item, template, f"{where}[{index}]")
    elif like is None:  # a cached Gaussian: None or a float
        if value is not None and type(value) is not float:
            raise _mismatch(where, "None or a float", value)
    elif type(value) is not type(like):
        raise _mismatch(where, f"a {type(like).__name__}", value)
    elif isinstance(like, str) and value != like:  # formats and generator kinds
        raise ValueError(f"{where} is {value[:40]!r}; this run expects {like!r}")


def _check_generators(rng: Mapping[str, Any]) -> None:
    """Applies the saved generator states to scratch generators: `restore_rng` cannot fail."""
    version, internal, gauss = rng["python"]
    kind, keys, pos, has_gauss, cached = rng["numpy"]
    try:
        random.Random().setstate((version, tuple(internal), gauss))
        np.random.RandomState().set_state((kind, keys.numpy(), pos, has_gauss, cached))
        torch.Generator().set_state(rng["torch"])
    except (ValueError, TypeError, RuntimeError, OverflowError) as error:
        raise ValueError(f"checkpoint.rng cannot be restored: {error}") from None


def check_state(step: int, state: Mapping[str, Any], model: nn.Module, optimizer: Any) -> None:
    """Whether `state`, the checkpoint saved at `step`, fits this run's model and optimizer.

    Raises:
        ValueError: naming the first key that does not fit, what it holds and what fits.
    """
    rng = dict(state.get("rng") or {}) if isinstance(state.get("rng"), Mapping) else None
    cuda = rng.pop("cuda", []) if rng is not None else []  # present only when saved on a GPU
    template = {
        "step": step,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "rng": {k: v for k, v in capture_rng().items() if k != "cuda"},
        "history": [],
    }
    _match({**state, "rng": rng, "history": []}, template, "checkpoint")
    if state["step"] != step:
        raise ValueError(f"checkpoint.step is {state['step']}, not the {step} of its file name")
    if not isinstance(cuda, list) or not all(isinstance(t, torch.Tensor) for t in cuda):
        raise _mismatch("checkpoint.rng.cuda", "a list of tensors", cuda)
    history = state["history"]
    if not isinstance(history, list) or not all(
        isinstance(entry, list | tuple)
        and len(entry) == 2
        and all(type(x) in (int, float) for x in entry)
        for entry in history
    ):
        raise ValueError("checkpoint.history is not a list of [step, loss] pairs")
    _check_generators(state["rng"])


def resume(
    checkpoints: CheckpointManager, model: nn.Module, optimizer: Any, stop: Callable[[], bool]
) -> Resumed | None:
    """Restore the model, optimizer and generators from the newest checkpoint that fits.

    Returns:
        Where training resumes, or None when no checkpoint fits (nothing was changed).

    Raises:
        CheckpointInterruptedError: `stop()` became true while checkpoints were read.
    """
    restored = checkpoints.load_latest(
        check=lambda step, state: check_state(step, state, model, optimizer), stop=stop
    )
    if restored is None:
        return None
    step, state = restored
    optimizer.load_state_dict(state["optimizer"])
    model.load_state_dict(state["model"])
    restore_rng(state["rng"])
    return Resumed(step, [list(entry) for entry in state["history"]])
