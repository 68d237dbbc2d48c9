"""digest_problems: an `@` reference that is not a full sha256 digest, one error per image."""

from __future__ import annotations

from vertex_retrain.specs.problems import Problem
from vertex_retrain.specs.registry_rules import digest_problems

DIGEST = "sha256:" + "0123456789abcdef" * 4
REPO = "europe-west4-docker.pkg.dev/p/r/trainer"


def _expected(field: str, image: str, reference: str, what: str = "image") -> Problem:
    name = image.partition("@")[0]
    return Problem(
        "error",
        field,
        image,
        f"The {what}'s digest {reference!r} is not resolved: a digest is sha256: followed by "
        "64 hex digits, as the build prints it; no registry serves this reference.",
        (f"{name}@sha256:<the 64 hex digits the build printed>", f"{name}:TAG"),
        "image-digest",
    )


def test_digest_problems_refuse_a_digest_that_is_not_64_hex_digits() -> None:
    short = f"{REPO}@sha256:abc"
    assert digest_problems([("jobSpec.image", short)]) == [
        _expected("jobSpec.image", short, "sha256:abc")
    ]


def test_digest_problems_name_the_images_as_they_are_told() -> None:
    image = f"{REPO}@latest"
    (problem,) = digest_problems([("f", image)], what="component image")
    assert problem == _expected("f", image, "latest", what="component image")


def test_digest_problems_accept_full_digests_and_tags() -> None:
    images = [("a", f"{REPO}@{DIGEST}"), ("b", f"{REPO}:1"), ("c", "python:3.11")]
    assert digest_problems(images) == []


def test_digest_problems_go_on_past_images_without_a_digest() -> None:
    bad = f"{REPO}@sha256:<digest>"
    problems = digest_problems([("a", f"{REPO}:1"), ("b", f"{REPO}@{DIGEST}"), ("c", bad)])
    assert problems == [_expected("c", bad, "sha256:<digest>")]


def test_digest_problems_report_each_image_once_at_its_first_field() -> None:
    bad = f"{REPO}@sha256:abc"
    other = f"{REPO}@sha256:def"
    problems = digest_problems([("a", bad), ("b", other), ("c", bad)])
    assert [(p.field, p.value) for p in problems] == [("a", bad), ("b", other)]


def test_digest_problems_read_the_reference_after_the_first_at() -> None:
    # A tag and a digest joined by a second '@': no registry resolves it.
    image = f"{REPO}@v1@{DIGEST}"
    assert digest_problems([("f", image)]) == [_expected("f", image, f"v1@{DIGEST}")]
