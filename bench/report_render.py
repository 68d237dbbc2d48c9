"""Turning benchmark results into the Markdown of `docs/benchmarks.md` (pure: no I/O).

Benchmarks return the shape of :func:`bench.figures.figure`. Some return their own dicts;
:func:`normalise` maps those it knows onto the shape (`bench.report_adapters`), and shows
any other dict as its raw numbers, so a benchmark's result is never dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench.figures import REQUIRED_KEYS
from bench.report_adapters import ADAPTERS

NOISE_NOTE = (
    "The machine is shared: other engineers' tests run on the same cores while the benchmarks "
    "run, so absolute times are noisy. Each figure is therefore a ratio against a baseline "
    "measured in the same run (interleaved with it where the benchmark allows), and the "
    "absolute numbers are given for scale only."
)
# The issue's targets, so that a benchmark that failed still shows what it was to meet.
ISSUE_TARGETS = {
    "bench_pipeline": "overhead <= 25%",
    "bench_trainer": "ratio >= 0.9",
    "bench_goodput": "runtime goodput >= 0.95",
}
HOW_TO = [
    "How to run: `make bench` (full, about 90 minutes on 2 cores), "
    "`python -m bench.report --quick` (a fast pass), `--only bench_goodput` (repeatable) to "
    "re-run some benchmarks and keep the others' recorded sections, or "
    "`python -m bench.bench_<name> [--quick]` to print one benchmark's "
    "figures. Each `bench/bench_*.py` runs in its own process with a time limit; one that "
    "fails is reported as failed below and the others still run. A new benchmark is a "
    "`bench/bench_<name>.py` whose `run(quick: bool)` returns `bench.figures.figure(...)`.",
    "",
]


def flatten(raw: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Scalar leaves of nested dicts as ("a.b", value); lists are summarised by length."""
    if isinstance(raw, Mapping):
        out: list[tuple[str, Any]] = []
        for key, value in raw.items():
            out += flatten(value, f"{prefix}.{key}" if prefix else str(key))
        return out
    if isinstance(raw, list | tuple):
        return [(prefix, f"{len(raw)} values")]
    return [(prefix, raw)]


def normalise(module: str, raw: Any) -> dict[str, Any]:
    """A benchmark's result in the report's shape.

    Args:
        module: The benchmark's module name, e.g. "bench_router".
        raw: What its `run(quick)` returned.

    Returns:
        The standard shape, or ``{"name", "raw": [(key, value)]}`` for a dict in no known
        shape (shown as a table of its numbers).
    """
    if isinstance(raw, Mapping) and all(key in raw for key in REQUIRED_KEYS):
        return dict(raw)
    if module in ADAPTERS and isinstance(raw, Mapping):
        try:
            return ADAPTERS[module](raw)
        except (KeyError, TypeError):
            pass  # the benchmark changed shape: show its raw numbers below
    return {"name": module, "raw": flatten(raw)}


def fmt(value: Any) -> str:
    """A number for a table: 4 significant digits, integers as they are."""
    if isinstance(value, bool) or value is None:
        return "-" if value is None else str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    return str(value).replace("|", "\\|")


def verdict(result: Mapping[str, Any]) -> str:
    """ "met", "**missed**" or "no target"."""
    if result.get("target") is None:
        return "no target"
    return "met" if result.get("met") else "**missed**"


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(fmt(cell) for cell in row) + " |" for row in rows]
    return lines


def anchor(title: str) -> str:
    """GitHub's heading anchor for a title."""
    kept = "".join(c for c in title.lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def _summary(entries: Sequence[Mapping[str, Any]]) -> list[str]:
    rows = []
    for entry in entries:
        result = entry.get("result") or {}
        title = result.get("name") or entry["module"]
        link = f"[{title}](#{anchor(title)})"
        if entry.get("error"):
            target = ISSUE_TARGETS.get(entry["module"], "-")
            rows.append([link, "-", "-", "-", target, "**failed** (not measured)"])
        elif "raw" in result:
            rows.append([link, "-", "-", "-", "-", "raw figures only"])
        else:
            unit = result["unit"]
            rows.append(
                [
                    link,
                    f"{fmt(result['baseline']['value'])} {unit}".strip(),
                    f"{fmt(result['measured']['value'])} {unit}".strip(),
                    fmt(result["ratio"]),
                    result["target"] or "-",
                    verdict(result),
                ]
            )
    return _table(["benchmark", "baseline", "measured", "ratio", "target", "verdict"], rows)


def _section(entry: Mapping[str, Any], plot_link: str | None) -> list[str]:
    result = entry.get("result") or {}
    title = result.get("name") or entry["module"]
    lines = [
        f"## {title}",
        "",
        f"Module: `bench/{entry['module']}.py`; ran {entry['seconds']:.0f} s{_when(entry)}.",
        "",
    ]
    if entry.get("error"):
        return [*lines, "**Failed**; the other benchmarks still ran. Error:", "", "```text",
                str(entry["error"]).strip(), "```", ""]  # fmt: skip
    if "raw" in result:
        note = (
            "This benchmark returns no standard figure (see `bench/figures.py`); its raw numbers:"
        )
        return [*lines, note, "", *_table(["figure", "value"], result["raw"]), ""]
    unit = result["unit"]
    lines += [result.get("what", ""), ""]
    head = [
        [
            f"baseline: {result['baseline']['label']}",
            f"{fmt(result['baseline']['value'])} {unit}".strip(),
        ],
        [
            f"measured: {result['measured']['label']}",
            f"{fmt(result['measured']['value'])} {unit}".strip(),
        ],
        [f"ratio ({result['ratio_meaning']})", fmt(result["ratio"])],
        ["target", f"{result['target']}: {verdict(result)}" if result["target"] else "none stated"],
    ]
    head += [
        [label, f"{fmt(value)} {row_unit}".strip()] for label, value, row_unit in result["rows"]
    ]
    lines += [*_table(["figure", "value"], head), ""]
    if result.get("notes"):
        lines += [result["notes"], ""]
    if plot_link:
        lines += [f"![{title}]({plot_link})", ""]
    return lines


def _when(entry: Mapping[str, Any]) -> str:
    """`, on DATE (load average L at start)` for entries that recorded when they ran."""
    if not entry.get("ran_at"):
        return ""
    load = entry.get("load_at_start")
    return f", on {entry['ran_at']}" + (f" (load average {load:g} at start)" if load else "")


def render_markdown(
    entries: Sequence[Mapping[str, Any]],
    machine: Mapping[str, Any],
    *,
    quick: bool,
    total_seconds: float,
    plot_links: Mapping[str, str],
    kept: Sequence[str] = (),
) -> str:
    """The whole of `docs/benchmarks.md`.

    Args:
        entries: Per benchmark: ``module``, ``seconds``, and ``result`` (normalised) or
            ``error``.
        machine: From :func:`bench.machine.describe_machine`.
        quick: Whether this was the quick pass.
        total_seconds: Wall time of the whole report.
        plot_links: Module name -> plot path relative to the Markdown file.
        kept: Modules whose entries come from earlier runs (a partial run keeps them).
    """
    mode = "quick pass (`--quick`: fewer, shorter repetitions)" if quick else "full run"
    ran = f"This is a {mode}; the whole report took {total_seconds:.0f} s."
    if kept:
        ran = (
            f"The last run ({'quick pass' if quick else 'full-length settings'}, "
            f"{total_seconds:.0f} s) re-ran {len(entries) - len(kept)} "
            f"of the {len(entries)} benchmarks; the other {len(kept)} sections are kept from "
            "earlier runs of the same mode (`docs/benchmarks.json`), each with the date it "
            "ran. The machine table is the last run's."
        )
    lines = [
        "# Benchmarks",
        "",
        "Generated by `python -m bench.report` (`make bench`); do not edit by hand, re-run it. "
        + ran,
        "",
        NOISE_NOTE,
        "",
        *HOW_TO,
        "## Machine",
        "",
        *_table(["", ""], [[key.replace("_", " "), value] for key, value in machine.items()]),
        "",
        "## Summary",
        "",
        *_summary(entries),
        "",
    ]
    for entry in entries:
        lines += _section(entry, plot_links.get(entry["module"]))
    return "\n".join(lines).rstrip() + "\n"
