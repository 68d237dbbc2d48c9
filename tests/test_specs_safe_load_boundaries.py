"""safe_load: each bound on both sides, and the exact line and alternative of each refusal.

The hostile files themselves (bombs, devices, `validate` on them) are in
test_hostile_job_files.py; these tests pin what a user reads: the source named once, the
limit, the path inside the document, the alternative, and a limit's value on both sides.
"""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path
from typing import Any

import pytest

from vertex_retrain.specs.safe_load import (
    JOB_FILE_LIMITS,
    Limits,
    LoadError,
    check_tree,
    load_file,
    parse_json,
    parse_yaml,
    read_regular_file,
)

FLATTEN = "flatten the nesting"
# Deeper than the interpreter's recursion limit: the parsers raise RecursionError. (YAML as
# block sequences, `- - - x`: PyYAML scans deep flow sequences in quadratic time.)
DEEP_JSON = "[" * 5000 + "]" * 5000
DEEP_YAML = "- " * 5000 + "x"
NO_ALIASES = "write the values out instead of using YAML anchors and aliases (& and *)"


def _refusal(call: Any, *args: Any, **kwargs: Any) -> LoadError:
    with pytest.raises(LoadError) as raised:
        call(*args, **kwargs)
    return raised.value


def _regular_file(max_bytes: int) -> str:
    return f"pass a regular JSON or YAML file of at most {max_bytes} bytes"


def _fake_stat(mode: int, size: int = 0) -> os.stat_result:
    return os.stat_result((mode, 0, 0, 1, 0, 0, size, 0, 0, 0))


@pytest.mark.parametrize("parse", [parse_json, parse_yaml])
def test_parse_accepts_text_of_exactly_max_bytes_and_refuses_one_more(parse: Any) -> None:
    limits = Limits(max_bytes=8)
    assert parse('"abcdef"', source="doc", limits=limits) == "abcdef"
    refused = _refusal(parse, '"abcdefg"', source="doc", limits=limits)
    assert str(refused) == "doc: larger than 8 bytes"
    assert refused.alternative == "keep it under 8 bytes"


@pytest.mark.parametrize(
    ("parse", "text"),
    [(parse_json, DEEP_JSON), (parse_yaml, DEEP_YAML)],
)
def test_parse_names_the_source_and_the_depth_limit_when_the_parser_recurses_too_deep(
    parse: Any, text: str
) -> None:
    limits = Limits(max_bytes=1 << 20, max_depth=9)
    refused = _refusal(parse, text, source="--param spec", limits=limits)
    assert str(refused) == "--param spec: nested more than 9 levels deep"
    assert refused.alternative == FLATTEN


@pytest.mark.parametrize("parse", [parse_json, parse_yaml])
def test_parse_checks_the_tree_against_the_limits_it_was_given(parse: Any) -> None:
    limits = Limits(max_depth=2)
    assert parse('{"a": [1]}', source="doc", limits=limits) == {"a": [1]}
    refused = _refusal(parse, '{"a": [[1]]}', source="doc", limits=limits)
    assert str(refused) == "doc: a[0] is nested more than 2 deep"
    assert refused.alternative == FLATTEN


def test_parse_json_names_the_line_and_column_of_a_syntax_error() -> None:
    refused = _refusal(parse_json, '{\n  "a": }', source="job.json")
    assert str(refused) == "job.json is not valid JSON (line 2, column 8: Expecting value)"
    assert refused.alternative == ""


def test_parse_json_refuses_nan_and_infinity_naming_the_constant() -> None:
    for constant in ("NaN", "Infinity", "-Infinity"):
        refused = _refusal(parse_json, f'{{"a": {constant}}}', source="--param a")
        assert str(refused) == (
            f"--param a is not valid JSON: {constant} is not allowed (it is not JSON)"
        )
        assert refused.alternative == ""


def test_parse_json_refuses_bytes_that_are_not_text() -> None:
    refused = _refusal(parse_json, b'"\xff"', source="doc")
    assert str(refused).startswith("doc is not valid JSON: 'utf-8' codec can't decode byte 0xff")


def test_parse_yaml_reads_one_document_unless_told_to_take_the_first() -> None:
    stream = "a: 1\n---\nb: 2\n"
    assert parse_yaml(stream, source="t.yaml", first_only=True) == {"a": 1}
    refused = _refusal(parse_yaml, stream, source="t.yaml")
    assert str(refused).startswith("t.yaml is not valid YAML: expected a single document")
    assert refused.alternative == ""


@pytest.mark.parametrize("text", ["", "# only a comment\n"])
def test_parse_yaml_reads_an_empty_document_as_null(text: str) -> None:
    assert parse_yaml(text, source="t.yaml") is None
    assert parse_yaml(text, source="t.yaml", first_only=True) is None


def test_parse_yaml_reports_a_syntax_error_on_one_line() -> None:
    message = str(_refusal(parse_yaml, "a: [1, 2\nb: 3\n", source="t.yaml"))
    assert message.startswith("t.yaml is not valid YAML: while parsing a flow sequence in ")
    assert "\n" not in message and "  " not in message
    assert "expected ',' or ']', but got ':' in" in message and "line 2, column 2" in message


def test_parse_yaml_refuses_a_control_character_as_a_load_error() -> None:
    refused = _refusal(parse_yaml, "a: b\x00\n", source="t.yaml")
    assert str(refused).startswith("t.yaml is not valid YAML: unacceptable character #x0000")


@pytest.mark.parametrize(
    "text", ["a: !!binary aGk=", "a: !!set {x: null}", "a: !!timestamp 2024-01-01"]
)
def test_parse_yaml_refuses_tags_json_cannot_carry(text: str) -> None:
    refused = _refusal(parse_yaml, text, source="t.yaml")
    assert str(refused).startswith("t.yaml is not valid YAML: could not determine a constructor")


def test_check_tree_counts_every_value_nulls_and_expanded_aliases_included() -> None:
    shared = [None, 1]
    document = {"a": shared, "b": shared}  # 1 + (1 + 2) * 2 = 7 values
    check_tree(document, source="doc", limits=Limits(max_values=7))
    refused = _refusal(check_tree, document, source="doc", limits=Limits(max_values=6))
    assert str(refused) == (
        "doc: holds more than 6 values once its aliases are expanded (an alias bomb?)"
    )
    assert refused.alternative == NO_ALIASES
    check_tree([None, None], source="doc", limits=Limits(max_values=3))
    assert "more than 2 values" in str(
        _refusal(check_tree, [None, None], source="doc", limits=Limits(max_values=2))
    )


def test_check_tree_depth_counts_the_top_level_as_one() -> None:
    check_tree([[["x"]]], source="doc", limits=Limits(max_depth=3))
    refused = _refusal(check_tree, [[["x"]]], source="doc", limits=Limits(max_depth=2))
    assert str(refused) == "doc: [0][0] is nested more than 2 deep"
    assert refused.alternative == FLATTEN
    check_tree({"a": {"b": {}}}, source="doc", limits=Limits(max_depth=3))
    refused = _refusal(check_tree, {"a": {"b": {}}}, source="doc", limits=Limits(max_depth=2))
    assert str(refused) == "doc: a.b is nested more than 2 deep"


def test_check_tree_names_the_top_level_when_it_breaks_a_bound() -> None:
    refused = _refusal(check_tree, {}, source="doc", limits=Limits(max_depth=0))
    assert str(refused) == "doc: (top level) is nested more than 0 deep"


def test_check_tree_counts_alias_uses_up_to_the_limit() -> None:
    shared = ["x"]
    check_tree([shared, shared], source="doc", limits=Limits(max_aliases=1))
    refused = _refusal(
        check_tree, [shared, shared, shared], source="doc", limits=Limits(max_aliases=1)
    )
    assert str(refused) == "doc: uses aliases more than 1 times"
    assert refused.alternative == NO_ALIASES
    check_tree([shared, shared, shared], source="doc", limits=Limits(max_aliases=2))


def test_check_tree_accepts_a_value_shared_by_siblings_and_cousins() -> None:
    shared: list[Any] = [1]
    check_tree({"a": shared, "b": shared, "c": [shared, {"d": shared}]}, source="doc")


def test_check_tree_names_the_path_of_a_value_that_contains_itself() -> None:
    loop: list[Any] = []
    loop.append(loop)
    refused = _refusal(check_tree, {"a": [0, loop]}, source="doc")
    assert str(refused) == "doc: a[1][0] contains itself (an alias inside its anchor)"
    assert refused.alternative == NO_ALIASES


def test_check_tree_refuses_a_key_that_is_not_a_string() -> None:
    refused = _refusal(check_tree, {"a": {"b": {True: 1}}}, source="doc")
    assert str(refused) == (
        "doc: key True under a.b is not a string; quote it "
        "(YAML reads on/off/yes/no as booleans and digits as numbers)"
    )
    refused = _refusal(check_tree, {1: "x"}, source="doc")
    assert str(refused).startswith("doc: key 1 under (top level) is not a string")


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
def test_check_tree_refuses_a_number_json_cannot_carry(number: float) -> None:
    refused = _refusal(check_tree, {"a": [1.5, number]}, source="doc")
    assert str(refused) == f"doc: a[1] is {number}, which JSON cannot carry"
    assert refused.alternative == ""


@pytest.mark.parametrize(("value", "kind"), [(b"x", "bytes"), ({1}, "set"), (object(), "object")])
def test_check_tree_refuses_a_value_of_a_type_json_has_not(value: object, kind: str) -> None:
    refused = _refusal(check_tree, [{"k": value}], source="doc")
    assert str(refused) == f"doc: [0].k is a {kind}, not JSON data"


def test_check_tree_walks_every_branch_after_an_empty_one() -> None:
    refused = _refusal(check_tree, {"a": [], "b": {}, "c": [float("nan")]}, source="doc")
    assert str(refused) == "doc: c[0] is nan, which JSON cannot carry"


def test_check_tree_accepts_every_json_type() -> None:
    check_tree(
        {"s": "x", "i": -3, "f": 2.5, "t": True, "n": None, "l": [], "d": {}},
        source="doc",
        limits=JOB_FILE_LIMITS,
    )


def test_read_regular_file_reads_exactly_max_bytes_and_refuses_one_more(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_bytes(b"a: 123456")
    assert read_regular_file(path, max_bytes=9) == b"a: 123456"
    refused = _refusal(read_regular_file, path, max_bytes=8)
    assert str(refused) == f"{path} is larger than 8 bytes"
    assert refused.alternative == _regular_file(8)


def test_read_regular_file_refuses_a_file_that_grew_after_its_stat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "job.yaml"
    path.write_bytes(b"a: 123456")
    real_stat = os.stat

    def stat_before_growth(target: Any) -> os.stat_result:
        info = real_stat(target)
        return os.stat_result((*info[:6], 0, *info[7:10]))  # index 6: st_size

    with monkeypatch.context() as patch:
        patch.setattr(os, "stat", stat_before_growth)
        assert read_regular_file(path, max_bytes=9) == b"a: 123456"
        refused = _refusal(read_regular_file, path, max_bytes=8)
    assert str(refused) == f"{path} is larger than 8 bytes"
    assert refused.alternative == _regular_file(8)


def test_read_regular_file_names_each_kind_of_file_it_refuses(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    sock_path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        cases = {
            tmp_path: "a folder",
            fifo: "a FIFO",
            Path(os.devnull): "a character device",
            sock_path: "a socket",
        }
        for path, kind in cases.items():
            refused = _refusal(read_regular_file, path, max_bytes=5)
            assert str(refused) == f"{path} is {kind}, not a regular file"
            assert refused.alternative == _regular_file(5)


@pytest.mark.parametrize(
    ("mode", "kind"),
    [(stat.S_IFBLK | 0o600, "a block device"), (0o600, "not a regular file")],
)
def test_read_regular_file_names_a_block_device_and_an_unknown_kind(
    mode: int, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patch:
        patch.setattr(os, "stat", lambda _path: _fake_stat(mode))
        refused = _refusal(read_regular_file, "/dev/disk0", max_bytes=5)
    assert str(refused) == f"/dev/disk0 is {kind}, not a regular file"
    assert refused.alternative == _regular_file(5)


@pytest.mark.timeout(60)  # the bug this catches is an open() that waits for a writer forever
def test_read_regular_file_refuses_a_fifo_swapped_in_after_the_stat_without_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = tmp_path / "job.yaml"
    os.mkfifo(fifo)  # no writer
    with monkeypatch.context() as patch:
        patch.setattr(os, "stat", lambda _path: _fake_stat(stat.S_IFREG | 0o600, size=3))
        refused = _refusal(read_regular_file, fifo, max_bytes=5)
    assert str(refused) == f"{fifo} is a FIFO, not a regular file"
    assert refused.alternative == _regular_file(5)


def test_read_regular_file_says_why_it_cannot_read(tmp_path: Path) -> None:
    missing = tmp_path / "missing.yaml"
    refused = _refusal(read_regular_file, missing, max_bytes=5)
    assert str(refused) == f"cannot read {missing}: No such file or directory"
    assert refused.alternative == "check the path and its permissions"


def test_load_file_reads_json_by_its_suffix_in_any_case(tmp_path: Path) -> None:
    # YAML would read NaN as the string "NaN": only the JSON parser refuses it.
    for name in ("job.json", "job.JSON"):
        path = tmp_path / name
        path.write_text('{"a": NaN}')
        refused = _refusal(load_file, path)
        assert str(refused) == f"{path} is not valid JSON: NaN is not allowed (it is not JSON)"
    yaml_path = tmp_path / "job.yaml"
    yaml_path.write_text('{"a": NaN}')
    assert load_file(yaml_path) == {"a": "NaN"}


def test_load_file_skips_a_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}')
    assert load_file(path) == {"a": 1}


def test_load_file_names_the_byte_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_bytes(b"a: \xff\n")
    refused = _refusal(load_file, path)
    assert str(refused) == f"{path} is not UTF-8 text: invalid start byte at byte 3"


@pytest.mark.parametrize("name", ["job.json", "job.yaml"])
def test_load_file_applies_its_limits_and_names_the_file(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text('{"a": [[1]]}')
    assert load_file(path, limits=Limits(max_depth=3)) == {"a": [[1]]}
    refused = _refusal(load_file, path, limits=Limits(max_depth=2))
    assert str(refused) == f"{path}: a[0] is nested more than 2 deep"
    refused = _refusal(load_file, path, limits=Limits(max_bytes=11))
    assert str(refused) == f"{path} is larger than 11 bytes"


def test_load_file_reads_one_yaml_document_unless_told_to_take_the_first(tmp_path: Path) -> None:
    path = tmp_path / "pipeline.yaml"
    path.write_text("a: 1\n---\nb: 2\n")
    assert load_file(path, first_only=True) == {"a": 1}
    refused = _refusal(load_file, path)
    assert str(refused).startswith(f"{path} is not valid YAML: expected a single document")
