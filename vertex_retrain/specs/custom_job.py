"""Typed builder for a CustomJob: pools by role, scheduling and the other job fields."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vertex_retrain.specs.job_rules import DISTRIBUTION_LABEL, Distribution
from vertex_retrain.specs.machine_catalog import Catalog
from vertex_retrain.specs.problems import Problem, error, raise_or_warn
from vertex_retrain.specs.scheduling import Scheduling
from vertex_retrain.specs.validate import validate_custom_job
from vertex_retrain.specs.worker_pools import WorkerPool, pool_list


@dataclass(frozen=True)
class CustomJobSpec:
    """A CustomJob, with its worker pools given by role (Vertex orders them by position).

    Attributes:
        display_name: Job name shown in the console.
        primary: Pool [0], the chief; exactly one replica.
        workers: Pool [1].
        parameter_servers: Pool [2] for ``ParameterServerStrategy`` (exclusive with
            ``reduction_server``).
        reduction_server: Pool [2] running the Reduction Server (see
            :func:`vertex_retrain.specs.worker_pools.reduction_server_pool`).
        evaluators: Pool [3].
        scheduling: Timeout, strategy (STANDARD / SPOT / FLEX_START), retries.
        service_account: Service account the replicas run as.
        network: VPC network, ``projects/NUMBER/global/networks/NAME``.
        base_output_dir: ``gs://`` prefix; Vertex derives ``AIP_MODEL_DIR``,
            ``AIP_CHECKPOINT_DIR`` and ``AIP_TENSORBOARD_LOG_DIR`` from it.
        labels: Resource labels.
        tensorboard: Vertex TensorBoard resource name for log upload.
        distribution: How several GPUs / replicas cooperate (``ddp``, ``mirrored``,
            ``multi_worker_mirrored``, ``parameter_server``, ``reduction_server``,
            ``model_parallel``). Written as the ``distribution`` label; without it a job with
            several GPUs or replicas gets a warning.
    """

    display_name: str
    primary: WorkerPool
    workers: WorkerPool | None = None
    parameter_servers: WorkerPool | None = None
    reduction_server: WorkerPool | None = None
    evaluators: WorkerPool | None = None
    scheduling: Scheduling | None = None
    service_account: str | None = None
    network: str | None = None
    base_output_dir: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    tensorboard: str | None = None
    distribution: Distribution | None = None

    def builder_problems(self) -> list[Problem]:
        """Returns problems only the builder can see (two roles claiming pool [2])."""
        if self.parameter_servers is not None and self.reduction_server is not None:
            return [
                error(
                    "parameter_servers",
                    "parameter_servers and reduction_server",
                    "Both use pool [2]; a job has parameter servers or a Reduction Server.",
                    ["parameter_servers=None", "reduction_server=None"],
                    code="pool-order",
                )
            ]
        return []

    def all_labels(self) -> dict[str, str]:
        """Returns the labels written to the payload (user labels + ``distribution``)."""
        labels = dict(self.labels)
        if self.distribution is not None:
            labels[DISTRIBUTION_LABEL] = self.distribution
        return labels

    def job_spec_payload(self) -> dict[str, Any]:
        """Returns the ``jobSpec`` body (also a tuning job's ``trialJobSpec``), unvalidated."""
        third = self.reduction_server or self.parameter_servers
        spec: dict[str, Any] = {
            "workerPoolSpecs": pool_list([self.primary, self.workers, third, self.evaluators])
        }
        if self.scheduling is not None and self.scheduling.to_payload():
            spec["scheduling"] = self.scheduling.to_payload()
        if self.service_account:
            spec["serviceAccount"] = self.service_account
        if self.network:
            spec["network"] = self.network
        if self.base_output_dir:
            spec["baseOutputDirectory"] = {"outputUriPrefix": self.base_output_dir}
        if self.tensorboard:
            spec["tensorboard"] = self.tensorboard
        return spec

    def unvalidated_payload(self) -> dict[str, Any]:
        """Returns the CustomJob resource without validating it (for tests and linters)."""
        payload: dict[str, Any] = {
            "displayName": self.display_name,
            "jobSpec": self.job_spec_payload(),
        }
        if self.all_labels():
            payload["labels"] = self.all_labels()
        return payload

    def validate(
        self, *, catalog: Catalog | None = None, today: _dt.date | None = None
    ) -> list[Problem]:
        """Returns every problem of this job (errors and warnings)."""
        # The builder writes only real fields: the descriptor walk would find nothing.
        return self.builder_problems() + validate_custom_job(
            self.unvalidated_payload(), catalog=catalog, today=today, check_fields=False
        )

    def to_payload(
        self, *, catalog: Catalog | None = None, today: _dt.date | None = None
    ) -> dict[str, Any]:
        """Validates the job and returns the CustomJob resource (REST JSON, camelCase).

        Args:
            catalog: Machine catalog (default: the packaged one).
            today: Date for retirement checks (default: today).

        Returns:
            ``{"displayName", "jobSpec": {...}, "labels"?}``, ready for the Vertex or local
            backend.

        Raises:
            JobSpecError: When the job is impossible; the message lists every error with
                field, value, reason and valid alternatives. Warnings are emitted as
                :class:`~vertex_retrain.specs.problems.JobSpecWarning`.
        """
        raise_or_warn(self.validate(catalog=catalog, today=today))
        return self.unvalidated_payload()
