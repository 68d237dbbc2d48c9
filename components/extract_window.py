"""extract_window: a warehouse source's window as the Parquet folder the data steps read."""

from typing import NamedTuple

from vertex_retrain.components.exec_launch import lightweight_component
from vertex_retrain.components.signature_defaults import defaults_from
from vertex_retrain.specs.defaults import RUN_PLACEHOLDERS


# `...`: the default vertex_retrain.specs.defaults defines (components/signature_defaults.py).
@lightweight_component
@defaults_from(RUN_PLACEHOLDERS)
def extract_window(
    backend: str,
    data_uri: str,
    dataset_declaration: dict,
    as_of: str,
    output_root: str,
    project: str = ...,
    location: str = ...,
) -> NamedTuple(
    "Outputs",
    [
        ("data_uri", str),
        ("digest", str),
        ("rows", int),
        ("bytes_scanned", int),
        ("bytes_billed", int),
    ],
):
    """Queries the declared source for the window before ``as_of``; writes it one file a period.

    The declaration's ``source`` (docs/components.md#warehouse-sources) says where the rows
    are: a Parquet folder (nothing to do: ``data_uri`` is passed on), a BigQuery table or view
    (Vertex: the official client, in ``project`` and ``location``, as the pipeline's service
    account) or DuckDB (a database file or Parquet glob under ``data_uri``). The library writes
    the query from the declared table and time column. The window's folder is named by its
    content digest, so the steps keyed on the returned ``data_uri`` reuse their cached outputs
    when the window is unchanged. Run it with caching off: it reads what its inputs do not show.
    A missing table, a missing or mistyped time column, a scan over ``source.max_bytes`` or an
    empty window fails the task with one line, before any training.

    Args:
        backend: ``"vertex"`` or ``"local"``; decides how ``gs://`` URIs are read.
        data_uri: The dataset folder (a DuckDB file or glob is relative to it).
        dataset_declaration: The dataset declaration (docs/components.md#dataset-declaration).
        as_of: The window end, ``YYYY-MM-DD`` (from ``data_window``).
        output_root: Where extracted windows are kept (pass ``dsl.PIPELINE_ROOT_PLACEHOLDER``).
        project: The Google Cloud project BigQuery runs and bills the query in.
        location: The region BigQuery runs the query in.

    Returns:
        data_uri: The Parquet folder for ``check_data`` and ``prepare_dataset``.
        digest: ``sha256:<hex>`` of the window's content (empty for a Parquet folder).
        rows: Rows extracted.
        bytes_scanned: The window query's scan (BigQuery's dry run; DuckDB's estimate).
        bytes_billed: Bytes BigQuery billed (0 locally); the run summary prices them.
    """
    from vertex_retrain.steps.extract_window import extract_window as extract

    window = extract(
        backend=backend,
        data_uri=data_uri,
        dataset_declaration=dict(dataset_declaration),
        as_of=as_of,
        output_root=output_root,
        project=project,
        location=location,
    )
    if window.digest:
        state = "reused" if window.reused else "written"
        print(
            f"window before {as_of}: {window.rows} rows in {window.periods} files, "
            f"{window.digest} ({state}), {window.bytes_billed} bytes billed"
        )
    return (
        window.data_uri,
        window.digest,
        window.rows,
        window.bytes_scanned,
        window.bytes_billed,
    )
