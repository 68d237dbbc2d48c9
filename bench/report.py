"""`make bench`: run every benchmark in `bench/` and write `docs/benchmarks.md` with plots.

Each `bench/bench_*.py` module's `run(quick)` runs in its own process (so one benchmark's
environment changes, crash or hang cannot spoil the others) under a time limit; a benchmark
that raises or times out is reported as failed with its error. The Markdown and the PNGs
under `docs/img/` are written atomically.

    .venv/bin/python -m bench.report [--quick] [--only bench_cli ...]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.report_render import normalise, render_markdown
from bench.report_store import load_entries, merge_entries, record_text, store_path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
DOC = REPO / "docs" / "benchmarks.md"
IMG_DIR = REPO / "docs" / "img"
# The order of the report; benchmarks not listed follow in name order.
ORDER = (
    "bench_cli",
    "bench_pipeline",
    "bench_executor",
    "bench_datagen",  # writes the seed-scale dataset that bench_trainer then trains on
    "bench_trainer",
    "bench_quality",  # one epoch at the seeds' scale on bench_datagen's dataset
    "bench_scaling",
    "bench_weekly_seed",
    "bench_weekly_warm",
    "bench_goodput",
    "bench_tuning",
    "bench_router",
    "bench_serving",
)
TIMEOUT_SECONDS = {"quick": 300.0, "full": 900.0}
# The weekly pipeline at seed scale runs for most of its 45-minute target.
TIMEOUT_OVERRIDES = {
    "bench_weekly_seed": {"quick": 900.0, "full": 7200.0},
    # Two weekly runs in a row at seed scale: a full week, then a warm-started one.
    "bench_weekly_warm": {"quick": 1500.0, "full": 3 * 3600.0},
    # Three seeds, each a generated world, an epoch at the seeds' scale and an evaluation.
    "bench_quality": {"quick": 1800.0, "full": 5 * 3600.0},
    # Three seeds, each a world, its first champion and four weeks trained both ways.
    "bench_warm_start": {"quick": 600.0, "full": 3600.0},
}
STOP_GRACE_SECONDS = 30.0


def discover(bench_dir: Path = BENCH_DIR) -> list[str]:
    """Module names of the benchmarks (`bench_*.py`), in report order."""
    found = {p.stem for p in bench_dir.glob("bench_*.py")}
    return [m for m in ORDER if m in found] + sorted(found - set(ORDER))


def atomic_write_text(path: Path, text: str) -> None:
    """Write `text` to `path` through a temp file and a rename: never a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def run_in_process(module: str, quick: bool, result_path: Path) -> int:
    """Import `bench.<module>`, call `run(quick)` and write the result (or error) as JSON."""
    try:
        result = importlib.import_module(f"bench.{module}").run(quick)
        record: dict[str, Any] = {"result": result}
    except Exception:  # the report shows any failure of a benchmark, whatever its type
        record = {"error": traceback.format_exc(limit=8)}
    atomic_write_text(result_path, json.dumps(record, default=str))
    return 0 if "result" in record else 1


def _run_child(argv: list[str], timeout: float) -> int | str:
    """Run a benchmark process; on timeout SIGTERM its group (the local executor then stops
    its replicas cleanly), and SIGKILL what is left after a grace period."""
    child = subprocess.Popen(
        argv, cwd=REPO, stdout=sys.stderr, stderr=sys.stderr, start_new_session=True
    )
    try:
        return child.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop_group(child)
        return f"timed out after {timeout:.0f} s and was stopped"
    except BaseException:  # Ctrl-C: the child has its own session, so stop it ourselves
        _stop_group(child)
        raise


def _stop_group(child: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):  # the group may be gone already
        os.killpg(child.pid, signal.SIGTERM)
    try:
        child.wait(timeout=STOP_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()


def run_isolated(module: str, quick: bool, timeout: float) -> dict[str, Any]:
    """Run one benchmark in a child process; return ``{module, seconds, result | error}``."""
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-report-") as scratch:
        result_path = Path(scratch) / "result.json"
        argv = [
            sys.executable,
            "-m",
            "bench.report",
            "--single",
            module,
            "--result",
            str(result_path),
        ]
        if quick:
            argv.append("--quick")
        code = _run_child(argv, timeout)
        entry: dict[str, Any] = {"module": module, "seconds": time.monotonic() - began}
        if result_path.is_file():
            entry.update(json.loads(result_path.read_text(encoding="utf-8")))
        else:
            entry["error"] = f"the benchmark process ended without a result (exit: {code})"
    return entry


def plot_all(entries: list[dict[str, Any]], img_dir: Path, doc: Path) -> dict[str, str]:
    """Draw each result's plot; return module -> link relative to the document."""
    from bench.report_plots import draw_plot

    links = {}
    for entry in entries:
        result = entry.get("result") or {}
        if entry.get("error") or not result.get("plot"):
            continue
        path = img_dir / f"{entry['module'].replace('_', '-')}.png"
        try:
            draw_plot(result["plot"], result["name"], path)
        except ValueError as error:
            result["notes"] = f"{result.get('notes', '')} (No plot: {error}.)".strip()
            continue
        links[entry["module"]] = os.path.relpath(path, doc.parent)
    return links


def build_report(
    modules: Sequence[str],
    *,
    quick: bool,
    doc: Path = DOC,
    img_dir: Path = IMG_DIR,
    keep_others: bool = False,
) -> list[dict[str, Any]]:
    """Run `modules`, draw the plots and write the document; return the entries run.

    Args:
        modules: The benchmarks to run, in report order.
        quick: The quick pass.
        doc: The Markdown file; its results are kept beside it (`bench.report_store`).
        img_dir: Where the plots go.
        keep_others: Keep the recorded entries of benchmarks not in `modules` (a partial
            run, `--only`), so the document still shows every benchmark, each with its date.
    """
    from bench.machine import describe_machine

    machine = describe_machine()
    began = time.monotonic()
    store = store_path(doc)
    kept = load_entries(store, quick=quick) if keep_others else []
    entries = []
    for module in modules:
        print(f"[bench] {module} ...", file=sys.stderr, flush=True)
        limits = TIMEOUT_OVERRIDES.get(module, TIMEOUT_SECONDS)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
        ran_at = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
        entry = run_isolated(module, quick, limits["quick" if quick else "full"])
        entry.update(ran_at=ran_at, load_at_start=round(load, 2))
        if "result" in entry:
            entry["result"] = normalise(module, entry["result"])
        state = "FAILED" if entry.get("error") else "done"
        print(f"[bench] {module} {state} in {entry['seconds']:.0f} s", file=sys.stderr, flush=True)
        entries.append(entry)
    order = list(dict.fromkeys([*discover(BENCH_DIR), *modules]))
    shown = merge_entries(kept, entries, order)
    links = plot_all(shown, img_dir, doc)
    text = render_markdown(
        shown,
        machine,
        quick=quick,
        total_seconds=time.monotonic() - began,
        plot_links=links,
        kept=[e["module"] for e in shown if e["module"] not in modules],
    )
    atomic_write_text(store, record_text(shown, quick=quick))
    atomic_write_text(doc, text)
    return entries


def main(argv: Sequence[str] | None = None) -> int:
    """Command line; exit 1 when any benchmark failed (the report is written regardless)."""
    parser = argparse.ArgumentParser(prog="python -m bench.report", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer, shorter repetitions")
    parser.add_argument(
        "--only", action="append", metavar="MODULE", help="run only this benchmark (repeatable)"
    )
    parser.add_argument("--out", type=Path, default=DOC, help=f"Markdown file (default {DOC})")
    parser.add_argument("--single", help=argparse.SUPPRESS)  # child mode: one benchmark
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    from bench.measure import exit_on_sigterm

    # A child stopped on its time limit takes its commands and folders with it; the report
    # stopped stops its child's process group first (`_run_child`), which a default SIGTERM
    # would leave running on alone.
    exit_on_sigterm()
    if args.single:
        if args.result is None:
            parser.error("--single needs --result")
        return run_in_process(args.single, args.quick, args.result)
    available = discover()
    unknown = sorted(set(args.only or []) - set(available))
    if unknown:
        parser.error(f"unknown benchmark(s) {unknown}; available: {', '.join(available)}")
    modules = [m for m in available if not args.only or m in args.only]
    entries = build_report(
        modules,
        quick=args.quick,
        doc=args.out,
        img_dir=args.out.parent / "img",
        keep_others=bool(args.only),
    )
    failed = [e["module"] for e in entries if e.get("error")]
    print(f"wrote {args.out}; failed: {', '.join(failed) or 'none'}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
