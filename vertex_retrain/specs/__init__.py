"""Job-specs core: typed builders, machine catalog, validation and cost estimates.

Pure and cheap to import (stdlib + PyYAML); ``google.cloud.aiplatform_v1`` is imported only
inside :func:`check_payload_parses` and when validation first checks field names.
"""

from vertex_retrain.specs.cost import (
    CostEstimate,
    PipelineCostEstimate,
    default_efficiency,
    estimate_job_cost,
    estimate_pipeline_cost,
    estimate_scaling_cost,
)
from vertex_retrain.specs.custom_job import CustomJobSpec
from vertex_retrain.specs.machine_catalog import Catalog, load_catalog
from vertex_retrain.specs.payload_io import normalize_job
from vertex_retrain.specs.price_lines import PriceLine
from vertex_retrain.specs.prices import PriceBook, PriceFigure, load_prices
from vertex_retrain.specs.problems import JobSpecError, JobSpecWarning, Problem
from vertex_retrain.specs.proto_check import (
    PayloadProtoError,
    canonical_payload,
    check_payload_parses,
)
from vertex_retrain.specs.scheduling import Scheduling
from vertex_retrain.specs.tuning import (
    CategoricalParameter,
    Conditional,
    DiscreteParameter,
    DoubleParameter,
    IntegerParameter,
    Metric,
    TuningJobSpec,
)
from vertex_retrain.specs.validate import validate_custom_job, validate_job, validate_tuning_job
from vertex_retrain.specs.worker_pools import (
    ContainerCode,
    Disk,
    Machine,
    PythonPackageCode,
    ReservationAffinity,
    WorkerPool,
    reduction_server_pool,
)

__all__ = [
    "Catalog",
    "CategoricalParameter",
    "Conditional",
    "ContainerCode",
    "CostEstimate",
    "CustomJobSpec",
    "DiscreteParameter",
    "Disk",
    "DoubleParameter",
    "IntegerParameter",
    "JobSpecError",
    "JobSpecWarning",
    "Machine",
    "Metric",
    "PayloadProtoError",
    "PipelineCostEstimate",
    "PriceBook",
    "PriceFigure",
    "PriceLine",
    "Problem",
    "PythonPackageCode",
    "ReservationAffinity",
    "Scheduling",
    "TuningJobSpec",
    "WorkerPool",
    "canonical_payload",
    "check_payload_parses",
    "default_efficiency",
    "estimate_job_cost",
    "estimate_pipeline_cost",
    "estimate_scaling_cost",
    "load_catalog",
    "load_prices",
    "normalize_job",
    "reduction_server_pool",
    "validate_custom_job",
    "validate_job",
    "validate_tuning_job",
]
