"""Terminal output of the command line: rich tables, JSON, and no ANSI codes off a terminal.

Every command writes through these helpers, so one rule holds everywhere: colour and live
progress only when the output is a terminal; piped output and log files get plain text (no
escape codes). Tables are cut to the terminal's width on a terminal unless ``--wide`` asks for
every cell whole; off a terminal (a pipe, a file) there is no width to fit, so cells are whole
except digests of many values (:attr:`Column.digest`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
"""An ANSI escape sequence (colours, cursor moves), as kfp.local's log lines carry them."""

_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:\d\d|Z)?")

WIDE_WIDTH = 10_000
"""The console width under ``--wide``: wide enough that no cell is cut or wrapped."""


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
"""Characters a terminal acts on instead of showing: C0 and C1 controls (ESC starts every
escape sequence, CR and LF move the cursor, CSI is one byte in C1), line separators and the
bidirectional overrides that reorder what is shown."""


def printable(text: str) -> str:
    """``text`` safe to print: each control character written as JSON writes it (``\\u001b``).

    Data (a model's name, an artifact URI, a file's field) is printed through this, as
    ``validate`` prints values as JSON: a name holding ``ESC ]0;...`` shows those characters
    instead of retitling the terminal, and a newline cannot forge a table row.
    """
    return _CONTROL.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def strip_ansi(text: str) -> str:
    """``text`` without ANSI escape sequences."""
    return ANSI.sub("", text)


def is_terminal(out: TextIO) -> bool:
    """Whether ``out`` is an interactive terminal (colour and live progress allowed)."""
    isatty = getattr(out, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def make_console(out: TextIO, *, wide: bool = False) -> Console:
    """A rich console on ``out``: colour only on a terminal, never markup from data.

    Args:
        out: The stream (stdout, a file, a test's StringIO).
        wide: Render as wide as the content needs (``--wide``).
    """
    terminal = is_terminal(out)
    return Console(
        file=out,
        force_terminal=terminal,
        color_system="auto" if terminal else None,
        no_color=not terminal,
        highlight=False,
        markup=False,
        emoji=False,
        width=WIDE_WIDTH if wide else None,
        soft_wrap=False,
    )


@dataclass(frozen=True)
class Column:
    """One column of a table.

    Attributes:
        key: The record's key it shows.
        header: Its heading.
        max_width: Cut longer cells with an ellipsis (None: never cut); ``--wide`` lifts it.
        digest: The cell lists many values (a model's metrics): cut at ``max_width`` even off
            a terminal, where other cells stay whole; ``--json`` and ``--wide`` show it all.
    """

    key: str
    header: str
    max_width: int | None = None
    digest: bool = False


def cell_text(value: Any) -> str:
    """A record's value as a table cell: no dict or list reprs, '-' for nothing."""
    if value is None or value == "" or value == [] or value == {}:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, str) and _TIMESTAMP.fullmatch(value):
        return value[:19].replace("T", " ")  # to the second; --json keeps the full value
    if isinstance(value, Mapping):
        return ", ".join(f"{printable(str(key))}={cell_text(item)}" for key, item in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(cell_text(item) for item in value)
    return printable(str(value))


def render_table(
    out: TextIO,
    columns: Sequence[Column],
    records: Sequence[Mapping[str, Any]],
    *,
    wide: bool = False,
    empty: str = "(none)",
) -> None:
    """Prints ``records`` as a table: one row each, wide cells cut unless ``wide``.

    Args:
        out: Where to print.
        columns: What to show, in order.
        records: One mapping per row (the same records ``--json`` prints).
        wide: Show every cell whole. Off a terminal only digest columns are ever cut: a pipe
            has no width, and a cut name or URI would lose what ``grep`` or a script reads.
        empty: The line printed under the headings when there are no records.
    """
    rows = [[cell_text(record.get(column.key)) for column in columns] for record in records]
    naturals = [
        max([len(column.header), *(len(row[index]) for row in rows)])
        for index, column in enumerate(columns)
    ]
    terminal = is_terminal(out)
    gap, overflow = 2, 0
    if wide:
        limits: list[int | None] = [None] * len(columns)
    elif not terminal:
        limits = [column.max_width if column.digest else None for column in columns]
    else:
        width = make_console(out).width
        limits = _fit(columns, naturals, width - gap * (len(columns) - 1))
        if _row_width(limits, naturals, gap) > width:  # closer columns, then never a cut one
            gap = 1
            limits = _fit(columns, naturals, width - gap * (len(columns) - 1))
        # Wider than the terminal even so: rich would drop the last columns without a sign,
        # so the rows go out whole and the terminal wraps them.
        overflow = width if _row_width(limits, naturals, gap) > width else 0
    padding = (0, 1) if gap == 2 else (0, 1, 0, 0)
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold", padding=padding)
    for column, natural, limit in zip(columns, naturals, limits, strict=True):
        table.add_column(
            column.header,
            max_width=limit,
            # Only the columns that may be cut ever are: names, versions and times stay whole.
            min_width=None if limit else natural,
            no_wrap=True,
            overflow="ellipsis" if limit else "fold",
        )
    for row in rows:
        table.add_row(*row)
    # Off a terminal the console is as wide as the rows: the limits above did the cutting.
    print_renderable(out, table, wide=wide or not terminal or bool(overflow))
    if overflow:
        out.write(f"(rows wider than the terminal's {overflow} columns: wrapped, none left out)\n")
    if not records:
        out.write(empty + "\n")
    elif any(
        limit is not None and natural > limit
        for natural, limit in zip(naturals, limits, strict=True)
    ):
        out.write("(cells cut with … to fit the width; --wide shows them whole)\n")


def _row_width(limits: Sequence[int | None], naturals: Sequence[int], gap: int) -> int:
    """A row's characters: each column at its limit (or whole), ``gap`` blanks between."""
    cells = sum(cut or whole for cut, whole in zip(limits, naturals, strict=True))
    return cells + gap * (len(naturals) - 1)


def _fit(columns: Sequence[Column], naturals: list[int], width: int) -> list[int | None]:
    """Widths of the columns that may be cut, so the row fits ``width``; None: never cut.

    The other columns keep their natural width; what is left is shared by the cut columns in
    proportion to their ``max_width`` (each at least its heading, at most its content).
    """
    cuttable = [i for i, column in enumerate(columns) if column.max_width]
    fixed = sum(naturals[i] for i in range(len(columns)) if i not in cuttable)
    wanted = {i: min(naturals[i], columns[i].max_width or 0) for i in cuttable}
    budget = width - fixed
    if sum(wanted.values()) <= budget:
        return [wanted.get(i) for i in range(len(columns))]
    total = sum(columns[i].max_width or 0 for i in cuttable) or 1
    shares = {
        i: max(len(columns[i].header), budget * (columns[i].max_width or 0) // total, 1)
        for i in cuttable
    }
    return [min(shares[i], wanted[i]) if i in shares else None for i in range(len(columns))]


def print_renderable(out: TextIO, renderable: Any, *, wide: bool = False) -> None:
    """Prints a rich renderable as lines without trailing blanks (plain off a terminal)."""
    console = make_console(out, wide=wide)
    with console.capture() as captured:
        console.print(renderable)
    out.write(
        "".join(_TRAILING_BLANKS.sub(r"\1", line) + "\n" for line in captured.get().splitlines())
    )


_TRAILING_BLANKS = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)$")
"""Blanks at a line's end, before any closing style codes (kept)."""


def print_json(out: TextIO, value: Any) -> None:
    """Prints ``value`` as indented JSON (``--json``): stable keys, no colour."""
    out.write(json.dumps(value, indent=2, sort_keys=True, default=str) + "\n")
