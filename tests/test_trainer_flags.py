"""trainer.task's integer flags accept what a tuning service hands them."""

from __future__ import annotations

import pytest

from trainer.task import build_parser


def test_task_integer_flags_accept_integral_floats() -> None:
    args = build_parser().parse_args(["--data", "d", "--embedding_dim", "16.0", "--epochs=3"])
    assert args.embedding_dim == 16 and isinstance(args.embedding_dim, int)
    assert args.epochs == 3


@pytest.mark.parametrize("value", ["16.5", "sixteen", "nan"])
def test_task_integer_flags_refuse_non_integers(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["--data", "d", "--embedding_dim", value])
    assert exited.value.code == 2
    assert "--embedding_dim" in capsys.readouterr().err
