"""The benchmark report's results on record, so a partial run (`--only`) updates the report.

`docs/benchmarks.json` (beside the Markdown) keeps every entry the report shows, each stamped
with when it ran and the load average then. A run of some benchmarks replaces those entries
and keeps the others, so the Markdown always shows every benchmark, each with its own date,
instead of only the ones that ran last. Entries of a different mode (quick against full) are
never mixed: a quick pass does not keep full-run figures, nor the other way round.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

FORMAT = "vertex-retrain-bench-results/v1"


def store_path(doc: Path) -> Path:
    """Where the results behind `doc` are kept: the same name with `.json`."""
    return doc.with_suffix(".json")


def load_entries(path: Path, *, quick: bool) -> list[dict[str, Any]]:
    """The entries on record for this mode; none when the file is absent, unreadable, of
    another format or of the other mode (the report then starts afresh)."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        return []
    if record.get("quick") is not quick or not isinstance(record.get("entries"), list):
        return []
    return [
        e for e in record["entries"] if isinstance(e, dict) and isinstance(e.get("module"), str)
    ]


def merge_entries(
    kept: Sequence[Mapping[str, Any]], fresh: Sequence[Mapping[str, Any]], order: Sequence[str]
) -> list[dict[str, Any]]:
    """`fresh` entries replace kept ones of the same module; the result follows `order`
    (modules not in it, such as a benchmark since removed, are dropped)."""
    by_module = {e["module"]: dict(e) for e in kept}
    by_module.update({e["module"]: dict(e) for e in fresh})
    return [by_module[m] for m in order if m in by_module]


def record_text(entries: Sequence[Mapping[str, Any]], *, quick: bool) -> str:
    """The JSON text of the record (sorted keys, so reruns diff cleanly)."""
    record = {"format": FORMAT, "quick": quick, "entries": list(entries)}
    return json.dumps(record, indent=1, sort_keys=True, default=str) + "\n"
