"""check_data: the data gate, before any training is paid for."""

from typing import NamedTuple

from kfp.dsl import Markdown, Metrics, Output

from vertex_retrain.components.exec_launch import lightweight_component


@lightweight_component
def check_data(
    backend: str,
    data_uri: str,
    dataset_declaration: dict,
    as_of: str,
    statistics: Output[Metrics],
    report: Output[Markdown],
    thresholds: dict = {},  # noqa: B006 - KFP reads defaults from the signature
    accept: str = "",
) -> NamedTuple(
    "Outputs", [("passed", bool), ("verdict", str), ("breaches", list), ("window_digest", str)]
):
    """Checks the newest period before ``as_of`` against the declaration and the one before.

    Measures (pyarrow compute) rows, distinct values of the declared distinct columns, rows
    per group, nulls, time range, duplicated rows, keys missing from the dimensions, and each
    group's category mix, and compares them with the period before
    (docs/components.md#data-gate). The task itself succeeds either way and records its
    statistics; the pipeline stops before training when ``passed`` is false.

    Args:
        backend: ``"vertex"`` or ``"local"``; decides how ``gs://`` URIs are read.
        data_uri: The dataset folder the declaration describes.
        dataset_declaration: The dataset declaration (docs/components.md#dataset-declaration).
        as_of: The window end (from ``data_window``); only rows before it are read.
        statistics: Output: the period's numbers (and the period before's) as metrics.
        report: Output: the verdict, each breach and the statistics, as Markdown.
        thresholds: Overrides of the gate's thresholds by name; empty: the defaults.
        accept: Comma-separated checks a person accepts for this run (a known change).

    Returns:
        passed: False when a breach was not accepted.
        verdict: One line: passed, or every breach with its value and threshold.
        breaches: One line per breach (accepted ones marked).
        window_digest: What the window's files are (path, size, time): the cache key of the
            steps that read them, since this task runs every time (caching off).
    """
    from vertex_retrain.steps.data_gate import check_data as run_gate

    gate = run_gate(
        backend=backend,
        data_uri=data_uri,
        dataset_declaration=dict(dataset_declaration),
        as_of=as_of,
        thresholds=dict(thresholds),
        accept=accept,
    )
    for name, value in gate.statistics.items():
        statistics.log_metric(name, value)
    with open(report.path, "w", encoding="utf-8") as handle:
        handle.write(gate.markdown())
    print(gate.markdown())
    notice = gate.breach_notice()
    if notice:  # a line the local run's progress shows (as Vertex's log has it)
        print(f"[executor] {notice}", flush=True)
    return (gate.passed, gate.verdict(), [b.line() for b in gate.breaches], gate.window_digest)
