"""The reference trainer without its SIGTERM handler, for bench_goodput's "periodic only" arm.

`python periodic_only_trainer.py <trainer.task flags>` runs `trainer.task` unchanged except
that SIGTERM keeps its default action (terminate at once), as in a trainer that never
installed a handler: the only checkpoints are the periodic ones (`--checkpoint_every_steps`)
and the final one. `trainer.task` has no flag that turns its SIGTERM checkpoint off.
"""

from __future__ import annotations

from trainer import task, train


def _keep_default_sigterm(self: train.StopFlag) -> None:
    """Install nothing, so SIGTERM terminates the process instead of requesting a checkpoint."""


train.StopFlag.install = _keep_default_sigterm  # type: ignore[method-assign]

if __name__ == "__main__":
    task.exit_now(task.main())
