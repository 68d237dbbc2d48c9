"""The sample-instance check of a new deployment, through the Vertex endpoint.

The local backend sends the sample instances to a new model server before it gets any traffic.
Vertex's public endpoints route a prediction by the traffic split only: in aiplatform v1 no
predict call can name a deployed model (``ExplainRequest.deployed_model_id`` can, but only for
models with an explanation spec). So on Vertex:

1. the model is deployed with 0% of the traffic: Vertex completes ``DeployModel`` only once the
   container answers its health route, before any request reaches it;
2. its share is then set, and the sample instances are sent through the endpoint until the
   response comes from the new deployed model (``PredictResponse.deployed_model_id``), with as
   many requests as give a 99.9% chance to reach a model holding that share;
3. if it answers with the wrong number of predictions, or requests fail and it never answers,
   the caller restores the previous split and undeploys it
   (:mod:`vertex_retrain.backends.vertex.endpoints`). Requests that all succeed without reaching
   it (a small share, bad luck) leave it deployed, and the result says the check was not done.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vertex_retrain.backends.vertex._protos import api_endpoint

__all__ = ["SmokeTestError", "SmokeTestResult", "default_prediction_client", "smoke_test"]

_LOG = logging.getLogger(__name__)
_MISS_PROBABILITY = 0.001
_MAX_REQUESTS = 300


class SmokeTestError(RuntimeError):
    """The new deployed model did not answer the sample instances."""


@dataclass(frozen=True)
class SmokeTestResult:
    """How the check went.

    Attributes:
        answered: The new deployed model answered the sample instances.
        requests: Requests sent.
        errors: Errors met on the way (any model of the endpoint may have raised them).
    """

    answered: bool
    requests: int
    errors: tuple[str, ...]


def default_prediction_client(location: str) -> Any:
    """The real `aiplatform_v1.PredictionServiceClient` for the region."""
    from google.cloud import aiplatform_v1

    return aiplatform_v1.PredictionServiceClient(
        client_options={"api_endpoint": api_endpoint(location)}
    )


def requests_needed(share_percent: int) -> int:
    """Requests that reach a model holding ``share_percent`` with probability 99.9%."""
    if share_percent >= 100:
        return 1
    if share_percent <= 0:
        return 0
    miss = 1 - share_percent / 100
    return min(_MAX_REQUESTS, math.ceil(math.log(_MISS_PROBABILITY) / math.log(miss)))


def smoke_test(
    client: Any,
    endpoint_name: str,
    deployed_model_id: str,
    instances: Sequence[Any],
    share_percent: int,
) -> SmokeTestResult:
    """Sends the sample instances through the endpoint until the new deployed model answers.

    Args:
        client: A ``PredictionServiceClient`` (or a fake).
        endpoint_name: ``projects/P/locations/L/endpoints/E``.
        deployed_model_id: The new deployed model.
        instances: The sample instances (JSON values).
        share_percent: Its share of the traffic (at least 1).

    Returns:
        The requests sent and the errors met on the way.

    Raises:
        SmokeTestError: It answered with another number of predictions, or requests failed
            and it never answered.
    """
    from google.api_core import exceptions as api_exceptions
    from google.cloud import aiplatform_v1

    values = list(instances)
    request = aiplatform_v1.PredictRequest(endpoint=endpoint_name)
    # proto-plus marshals google.protobuf.Value from plain JSON values when appended (its
    # constructor refuses a list of them).
    request.instances.extend(values)
    errors: list[str] = []
    budget = requests_needed(share_percent)
    for sent in range(1, budget + 1):
        try:
            response = client.predict(request=request)
        except api_exceptions.GoogleAPICallError as error:
            errors.append(f"{type(error).__name__}: {' '.join(str(error).split())[:200]}")
            continue
        if response.deployed_model_id != deployed_model_id:
            continue
        if len(response.predictions) != len(values):
            raise SmokeTestError(
                f"deployed model {deployed_model_id} answered {len(response.predictions)} "
                f"prediction(s) for {len(values)} sample instance(s)"
            )
        _LOG.info("deployed model %s answered the sample instances", deployed_model_id)
        return SmokeTestResult(True, sent, tuple(errors))
    if not errors:
        _LOG.warning(
            "deployed model %s was not reached by %d request(s) at %d%% of the traffic; the "
            "sample check was not done",
            deployed_model_id,
            budget,
            share_percent,
        )
        return SmokeTestResult(False, budget, ())
    raise SmokeTestError(
        f"deployed model {deployed_model_id} did not answer the sample instances in {budget} "
        f"request(s) through {endpoint_name} at {share_percent}% of the traffic; errors: "
        + "; ".join(sorted(set(errors))[:3])
    )
