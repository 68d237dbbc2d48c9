"""load_yaml_table: the parsed table, or one ValueError naming the table, the file and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vertex_retrain.specs.yaml_file import load_yaml_table

DEFAULT = Path("/packaged/prices.yaml")


def _first_price(raw: Any) -> float:
    return float(raw["prices"][0])


def test_load_yaml_table_returns_what_the_parser_makes_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text("prices: [1.5, 2]\nnote: café\n", encoding="utf-8")
    seen: list[Any] = []

    def parse(raw: Any) -> float:
        seen.append(raw)
        return _first_price(raw)

    assert load_yaml_table(path, what="price file", default=DEFAULT, parse=parse) == 1.5
    assert seen == [{"prices": [1.5, 2], "note": "café"}]


def test_load_yaml_table_names_a_file_it_cannot_read(tmp_path: Path) -> None:
    path = tmp_path / "missing.yaml"
    with pytest.raises(ValueError) as raised:
        load_yaml_table(path, what="price file", default=DEFAULT, parse=_first_price)
    assert str(raised.value) == (
        f"cannot read price file {path}: [Errno 2] No such file or directory: '{path}'"
    )


def test_load_yaml_table_names_a_file_that_is_not_yaml(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text("prices: [1.5\n")
    with pytest.raises(ValueError) as raised:
        load_yaml_table(path, what="price file", default=DEFAULT, parse=_first_price)
    assert str(raised.value).startswith(
        f"cannot read price file {path}: while parsing a flow sequence"
    )


def test_load_yaml_table_names_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_bytes(b"a: \xff\n")
    with pytest.raises(ValueError) as raised:
        load_yaml_table(path, what="price file", default=DEFAULT, parse=_first_price)
    assert str(raised.value) == (
        f"cannot read price file {path}: 'utf-8' codec can't decode byte 0xff in position 3: "
        "invalid start byte"
    )


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("other: 1\n", "KeyError: 'prices'"),
        ("prices: 3\n", "TypeError: 'int' object is not subscriptable"),
        ("prices: [x]\n", "ValueError: could not convert string to float: 'x'"),
        ("prices: []\n", "IndexError: list index out of range"),
    ],
)
def test_load_yaml_table_names_the_packaged_file_to_compare_a_malformed_one_with(
    tmp_path: Path, text: str, error: str
) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(text)
    with pytest.raises(ValueError) as raised:
        load_yaml_table(path, what="price file", default=DEFAULT, parse=_first_price)
    assert str(raised.value) == (
        f"price file {path} is malformed ({error}); compare it with {DEFAULT}"
    )
