"""Where an image's registry stores it, and which regions that serves."""

from __future__ import annotations

import pytest

from vertex_retrain.specs.registry_rules import (
    image_location_problems,
    registry_location,
    serves_region,
)


@pytest.mark.parametrize(
    ("image", "location"),
    [
        ("europe-west4-docker.pkg.dev/p/r/i:1", "europe-west4"),
        ("us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest", "us"),
        ("gcr.io/ml-pipeline/google-cloud-pipeline-components:2.22.0", "us"),
        ("eu.gcr.io/p/i@sha256:ab", "europe"),
        ("python:3.11-slim", None),
        ("ghcr.io/org/image:1", None),
    ],
)
def test_registry_location_reads_artifact_registry_and_gcr_hosts(
    image: str, location: str | None
) -> None:
    assert registry_location(image).location == location


def test_serves_region_by_region_or_by_multi_region_geography() -> None:
    assert serves_region("europe-west4", "europe-west4")
    assert serves_region("europe", "europe-west4") and serves_region("asia", "asia-east1")
    assert not serves_region("us", "europe-west4")
    assert not serves_region("europe-west1", "europe-west4")


def test_image_location_problems_warn_with_a_regional_alternative() -> None:
    (far,) = image_location_problems([("f", "us-docker.pkg.dev/p/r/i:1")], "asia-east1")
    assert far.severity == "warning" and far.code == "registry-region"
    assert far.alternatives[0].startswith("asia-east1-docker.pkg.dev/")
    (outside,) = image_location_problems([("f", "ghcr.io/o/i:1")], "asia-east1")
    assert outside.code == "registry-not-google"
    assert image_location_problems([("f", "asia-docker.pkg.dev/p/r/i:1")], "asia-east1") == []
