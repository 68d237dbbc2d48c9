"""CLI start-up: `compile.py --help` and `compile.py compile` against `python -c "import kfp"`.

Each command runs as a fresh process, interleaved round by round so background load hits
all three alike; the figure is the median wall time of each. `import kfp` is the floor any
command that compiles a pipeline pays, so `compile` is reported as a multiple of it, and
`--help` (which must not import kfp at all) as a fraction of it.

    .venv/bin/python -m bench.bench_cli [--quick]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.figures import figure, median, print_figure, time_command
from bench.measure import exit_on_sigterm

REPO = Path(__file__).resolve().parent.parent
# The quick pass checks the figure is made (one process of each), not its spread.
ROUNDS = {"quick": 1, "full": 7}


def run(quick: bool) -> dict[str, Any]:
    """Time the three commands; return the figures (also printed).

    Args:
        quick: 1 round instead of 7.

    Returns:
        The report's figure: baseline `import kfp`, measured `compile.py compile` (all
        pipelines and components), with `--help` among the rows and in the plot.
    """
    rounds = ROUNDS["quick" if quick else "full"]
    samples: dict[str, list[float]] = {"import kfp": [], "compile.py --help": [], "compile": []}
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as scratch:
        commands = {
            "import kfp": [sys.executable, "-c", "import kfp"],
            "compile.py --help": [sys.executable, "compile.py", "--help"],
            "compile": [sys.executable, "compile.py", "compile", "--out", scratch],
        }
        for _ in range(rounds):
            for label, argv in commands.items():
                samples[label] += time_command(argv, cwd=REPO, repeats=1)
        written = sorted(p.name for p in Path(scratch).rglob("*.yaml"))
    kfp_s, help_s, compile_s = (median(samples[k]) for k in samples)
    help_ratio = help_s / kfp_s
    return figure(
        name="CLI start-up",
        what=(
            f"Median wall time of {rounds} fresh processes of each command, interleaved: "
            f"`python compile.py compile --out TMP` (writes {len(written)} YAML files: every "
            "pipeline and component), `python compile.py --help`, and the baseline "
            '`python -c "import kfp"`.'
        ),
        baseline=("python -c 'import kfp'", kfp_s),
        measured=("compile.py compile (all pipelines and components)", compile_s),
        unit="s",
        ratio_meaning="compile time / import-kfp time",
        notes=(
            f"`compile.py --help` takes {help_s:.3f} s, {help_ratio:.2f}x the `import kfp` "
            "baseline: it imports neither kfp nor any heavy module. The issue sets no target "
            "for start-up."
        ),
        rows=[
            ("compile.py --help", help_s, "s"),
            ("--help / import kfp", help_ratio, "x"),
            ("YAML files compiled", len(written), ""),
            ("rounds", rounds, ""),
        ],
        plot={
            "kind": "box",
            "series": samples,
            "ylabel": "wall time per process (s)",
        },
    )


if __name__ == "__main__":
    exit_on_sigterm()  # stopped, it stops the commands it runs and removes its folders
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 round instead of 7")
    print_figure(run(parser.parse_args().quick))
