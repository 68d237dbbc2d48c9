"""Tuning efficiency: trials each algorithm needs to come within 1% of the best found.

The samplers are the local tuner's own:
`vertex_retrain.backends.local.studies.study_spec.make_sampler` and
`suggest`, driven through optuna's ask/tell exactly as `run_tuning_job` drives them, but with
a cheap surrogate metric instead of a trial process. Why a surrogate: one reference-trainer
trial is a process of several seconds, and a median over seeds needs hundreds of trials per
algorithm; the surrogate takes microseconds, so the figure measures the search and nothing
else.

The surrogate stands in for the reference trainer's validation NDCG@10 over the weekly
pipeline's search space (`weekly_retraining.TUNING_PARAMETERS`: learning_rate on a log scale
in [1e-4, 3e-2], embedding_dim in {16, 32, 64}): per embedding size a Gaussian bump in
log10(learning_rate) whose peak and best rate shift with the size (larger embeddings peak
slightly higher at a lower rate), plus Gaussian noise of sd 0.002 standing for seed-to-seed
variation. Its shape is a plausible stand-in, not a fit to trainer runs.

    .venv/bin/python -m bench.bench_tuning [--quick]
"""

from __future__ import annotations

import argparse
import math
import random
from collections.abc import Callable
from typing import Any

from bench.figures import figure, median, print_figure
from bench.measure import exit_on_sigterm

ALGORITHMS = {
    "Bayesian (ALGORITHM_UNSPECIFIED)": "ALGORITHM_UNSPECIFIED",
    "GRID_SEARCH": "GRID_SEARCH",
    "RANDOM_SEARCH": "RANDOM_SEARCH",
}
PEAK = {16: 0.440, 32: 0.462, 64: 0.465}
BEST_LR = {16: 8e-3, 32: 5e-3, 64: 3e-3}
WIDTH_DECADES = 0.6
NOISE_SD = 0.002
TOLERANCE = 0.01
LR_RANGE = (1e-4, 3e-2)
GRID_LR_POINTS = 8
EMBEDDING_DIMS = (16, 32, 64)
PARALLEL = 3  # parallelTrialCount of the parallel case
PAIR = ("Bayesian (ALGORITHM_UNSPECIFIED)", "RANDOM_SEARCH")  # the arms the target compares
TARGET_RATIO = 0.6
# (seeds, trials per study): the quick pass only checks the figure is well formed.
SIZES = {"quick": (3, 16), "full": (30, 40)}


def surrogate_ndcg(learning_rate: float, embedding_dim: int) -> float:
    """Noiseless surrogate of the trainer's validation NDCG@10."""
    dim = int(embedding_dim)
    distance = math.log10(learning_rate) - math.log10(BEST_LR[dim])
    return PEAK[dim] * math.exp(-(distance**2) / (2 * WIDTH_DECADES**2))


def parameter_specs(algorithm: str) -> list[dict[str, Any]]:
    """The weekly pipeline's search space; GRID_SEARCH gets learning_rate as a log grid.

    A grid cannot enumerate a continuous parameter (Vertex and the local tuner both refuse),
    so the grid arm uses `GRID_LR_POINTS` log-spaced rates over the same range.
    """
    low, high = LR_RANGE
    if algorithm == "GRID_SEARCH":
        step = (math.log10(high) - math.log10(low)) / (GRID_LR_POINTS - 1)
        rates = [round(10 ** (math.log10(low) + i * step), 8) for i in range(GRID_LR_POINTS)]
        lr_spec: dict[str, Any] = {
            "parameterId": "learning_rate",
            "discreteValueSpec": {"values": rates},
        }
    else:
        lr_spec = {
            "parameterId": "learning_rate",
            "doubleValueSpec": {"minValue": low, "maxValue": high},
            "scaleType": "UNIT_LOG_SCALE",
        }
    dims = {"parameterId": "embedding_dim", "discreteValueSpec": {"values": list(EMBEDDING_DIMS)}}
    return [lr_spec, dims]


def run_study(
    algorithm: str,
    seed: int,
    budget: int,
    metric: Callable[[float, int], float],
    parallel: int = 1,
) -> list[float]:
    """One study: the noiseless value of every trial, in order (noisy values drive the search).

    Args:
        algorithm: A Vertex algorithm name.
        seed: Sampler seed (also seeds the noise).
        budget: maxTrialCount; a grid stops early when exhausted, as the local tuner does.
        metric: The noiseless surface.
        parallel: parallelTrialCount. Above 1, trials are suggested in rounds of this many,
            each suggested while the others of its round are still running (optuna's ask
            and tell), and told together: the worst case of parallel workers that finish
            at once, and deterministic, unlike threads.
    """
    import optuna

    from vertex_retrain.backends.local.studies import study_spec as ss

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    specs = [ss.parse_param(p) for p in parameter_specs(algorithm)]
    if algorithm == "GRID_SEARCH":
        budget = min(budget, ss.grid_size(specs))
    study = optuna.create_study(
        sampler=ss.make_sampler(algorithm, specs, seed), direction="maximize"
    )
    noise = random.Random(seed)
    values: list[float] = []

    def objective(trial: optuna.trial.Trial) -> float:
        params = ss.suggest(trial, specs)
        true = metric(float(params["learning_rate"]), int(params["embedding_dim"]))
        values.append(true)
        return true + noise.gauss(0.0, NOISE_SD)

    if parallel == 1:
        study.optimize(objective, n_trials=budget)
        return values
    for start in range(0, budget, parallel):
        # Suggest one at a time: optuna samples a trial's relative parameters when it is
        # asked, and only trials that already hold parameters count as running for the liar.
        running = []
        for _ in range(min(parallel, budget - start)):
            trial = study.ask()
            running.append((trial, ss.suggest(trial, specs)))
        for trial, params in running:
            true = metric(float(params["learning_rate"]), int(params["embedding_dim"]))
            values.append(true)
            study.tell(trial, true + noise.gauss(0.0, NOISE_SD))
    return values


def trials_to_reach(values: list[float], threshold: float, budget: int) -> int:
    """1-based index of the first trial at or above `threshold`; `budget + 1` if none is."""
    return next((i + 1 for i, v in enumerate(values) if v >= threshold), budget + 1)


def best_so_far(values: list[float]) -> list[float]:
    """Running maximum."""
    out, best = [], -math.inf
    for value in values:
        best = max(best, value)
        out.append(best)
    return out


def bayesian_sampler_name() -> str:
    """Class name of the sampler the local tuner uses for ALGORITHM_UNSPECIFIED here."""
    from vertex_retrain.backends.local.studies import study_spec as ss

    specs = [ss.parse_param(p) for p in parameter_specs("ALGORITHM_UNSPECIFIED")]
    return type(ss.make_sampler("ALGORITHM_UNSPECIFIED", specs, 0)).__name__


def run(quick: bool) -> dict[str, Any]:
    """Run every algorithm over several seeds, one trial at a time and 3 at a time.

    Args:
        quick: ``SIZES["quick"]`` seeds x trials instead of ``SIZES["full"]`` (a smoke check
            of the figure, too noisy to judge the target).

    Returns:
        Baseline: median trials for random search; measured: for the Bayesian default, both
        sequential; the parallel case (parallelTrialCount 3) is in the rows and the verdict.
    """
    seeds, budget = SIZES["quick" if quick else "full"]
    arms = {label: (alg, 1) for label, alg in ALGORITHMS.items()}
    arms.update({f"{label}, {PARALLEL} at a time": (ALGORITHMS[label], PARALLEL) for label in PAIR})
    runs = {
        label: [run_study(alg, seed, budget, surrogate_ndcg, parallel) for seed in range(seeds)]
        for label, (alg, parallel) in arms.items()
    }
    best = max(max(values) for studies in runs.values() for values in studies)
    threshold = (1 - TOLERANCE) * best
    needed = {
        label: [trials_to_reach(v, threshold, budget) for v in studies]
        for label, studies in runs.items()
    }
    medians = {label: median(counts) for label, counts in needed.items()}
    never = {label: sum(c > budget for c in counts) for label, counts in needed.items()}
    curves = {
        label: [
            median([best_so_far(v)[i] for v in studies])
            for i in range(min(len(v) for v in studies))
        ]
        for label, studies in runs.items()
    }
    bayes_label, random_label = PAIR
    bayes, rand = medians[bayes_label], medians[random_label]
    parallel_ratio = (
        medians[f"{bayes_label}, {PARALLEL} at a time"]
        / medians[f"{random_label}, {PARALLEL} at a time"]
    )
    rows: list[tuple[str, float | int | str, str]] = []
    for label in arms:
        rows.append((f"{label}: median trials to within 1%", medians[label], "trials"))
        rows.append((f"{label}: studies that never got there", f"{never[label]}/{seeds}", ""))
    rows.append((f"Bayesian / random, {PARALLEL} at a time", parallel_ratio, "x"))
    rows.append(("best NDCG@10 found (noiseless surrogate)", best, ""))
    met = bayes / rand <= TARGET_RATIO and parallel_ratio <= TARGET_RATIO
    return figure(
        name="Tuning efficiency",
        what=(
            f"Trials until a study first evaluates a configuration whose noiseless surrogate "
            f"NDCG@10 is within {TOLERANCE:.0%} of the best found by any study; median over "
            f"{seeds} seeds, {budget} trials per study, one trial at a time and "
            f"{PARALLEL} at a time (parallelTrialCount {PARALLEL}). The samplers are "
            "the local tuner's (`make_sampler` + `suggest` from "
            "`vertex_retrain/backends/local/studies/study_spec.py`) driven through optuna on a "
            "surrogate of the reference trainer's metric (see `bench/bench_tuning.py` for its "
            "formula and why a surrogate)."
        ),
        baseline=("RANDOM_SEARCH, median trials", rand),
        measured=("Bayesian (ALGORITHM_UNSPECIFIED), median trials", bayes),
        unit="trials",
        ratio_meaning="Bayesian trials / random-search trials (below 1: Bayesian is faster)",
        target=(
            f"Bayesian <= {TARGET_RATIO} x random search's trials, one at a time and "
            f"{PARALLEL} at a time"
        ),
        met=met,
        notes=(
            "A study that never gets within 1% counts as budget + 1 trials, so a median at "
            f"{budget + 1} means most studies missed. ALGORITHM_UNSPECIFIED maps to optuna's "
            f"{bayesian_sampler_name()} on this machine (GPSampler needs torch and scipy "
            "importable); GRID_SEARCH walks "
            f"{GRID_LR_POINTS} log-spaced learning rates x {len(EMBEDDING_DIMS)} embedding "
            "sizes in a seeded random order, so its count depends on that grid. In the "
            f"parallel case, trials are suggested in rounds of {PARALLEL}, each while the "
            "others of its round are still running, and told together; optuna's TPE treats "
            "running trials as poor results (its constant liar, on by default), so a round "
            "spreads out. A round is one unit of wall time on Vertex, so the parallel case "
            f"needs about 1/{PARALLEL} of the rounds its trial count says. Bayesian / random: "
            f"{bayes / rand:.2f} one at a time, {parallel_ratio:.2f} {PARALLEL} at a time "
            f"(target <= {TARGET_RATIO}: {'met' if met else 'missed'})."
        ),
        rows=rows,
        plot={
            "kind": "line",
            "series": curves,
            "xlabel": "trial",
            "ylabel": "median best-so-far NDCG@10 (surrogate)",
        },
    )


if __name__ == "__main__":
    exit_on_sigterm()  # stopped, it stops the commands it runs and removes its folders
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    seeds, trials = SIZES["quick"]
    parser.add_argument("--quick", action="store_true", help=f"{seeds} seeds x {trials} trials")
    print_figure(run(parser.parse_args().quick))
