"""Fuzzing the prediction request path with hypothesis: instance parsing, the trainer's
server and the endpoint router (in front of it), over real HTTP.

Properties: parsing either returns well-formed values or raises `InstanceError`; every
HTTP request gets an answer, 200 with predictions or a 4xx in the one error shape, never a
500 and never a dropped connection: JSON bodies, Content-Length values, and raw bytes with
arbitrary request lines and headers. `FUZZ_EXAMPLES` scales the runs (default below; the
recorded long runs are in docs/security.md).
"""

from __future__ import annotations

import json
import os
import string
from collections.abc import Iterator
from typing import Any

import pytest
from data.hostile.support import (
    GOOD_BODY,
    GOOD_INSTANCE,
    N_DRINKS,
    error_message,
    post,
    raw_exchange,
    router_over_trainer_server,
    write_tiny_artifact,
)
from guarded_asgi.app import Limits
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainer.predictor import InstanceError, parse_instance
from trainer.serve import RunningServer, ServeConfig, start_server

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "0")) or None
# deadline=None: HTTP round trips on a loaded two-core machine vary; liveness is bounded by
# the client's socket timeout instead.
PARSE = settings(max_examples=EXAMPLES or 250, deadline=None)
HTTP = settings(
    max_examples=EXAMPLES or 150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
INT64 = 2**63

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
TIMESTAMPS = (
    st.datetimes().map(lambda when: when.isoformat())
    | st.from_regex(r"\A[0-9T:+\-. Z]{0,30}\Z")
    | st.text(max_size=30)
)
FIELD_VALUES = {
    "member_id": st.integers() | st.sampled_from([11, 12, 13, INT64 - 1, -INT64]) | JSON,
    "store_id": st.sampled_from([1, 2, 3, INT64, -INT64 - 1]) | st.integers() | JSON,
    "timestamp": TIMESTAMPS | JSON,
    "k": st.integers(min_value=-2, max_value=N_DRINKS + 2) | JSON,
}
# Instances that are mostly well formed, with any field missing, wrong or extra.
NEAR_INSTANCES = st.fixed_dictionaries({}, optional={**FIELD_VALUES, "extra": JSON}) | st.builds(
    lambda extra: {**GOOD_INSTANCE, **extra}, st.dictionaries(st.text(max_size=9), JSON)
)
INSTANCES = NEAR_INSTANCES | JSON


@PARSE
@given(INSTANCES, st.integers(min_value=1, max_value=50))
def test_parse_instance_returns_int64_values_or_raises_instance_error(
    instance: Any, max_k: int
) -> None:
    try:
        member, store, seconds, k = parse_instance(instance, "instances[0]", max_k)
    except InstanceError as error:
        assert str(error).startswith("instances[0]: ")
        return
    assert all(type(v) is int and -INT64 <= v < INT64 for v in (member, store, seconds))
    assert type(k) is int and 1 <= k <= max_k
    assert set(instance) <= {"member_id", "store_id", "timestamp", "k"}


BODIES = (
    st.lists(INSTANCES, max_size=5).map(lambda xs: json.dumps({"instances": xs}).encode())
    | JSON.map(lambda value: json.dumps(value).encode())
    | st.binary(max_size=200)
    | st.builds(
        lambda depth, open_, close: open_ * depth + close * depth,
        st.integers(min_value=1, max_value=60_000),
        st.sampled_from([b"[", b'{"a":', b'{"instances":[']),
        st.sampled_from([b"]", b"}", b""]),
    )
)


SERVER_LIMIT = ROUTER_LIMIT = 400_000
# Short deadlines bound the rare fuzzed request that leaves its head or body unfinished.
FUZZ_LIMITS = Limits(max_body_bytes=SERVER_LIMIT, head_timeout_s=5.0, body_timeout_s=5.0)
RAW = settings(
    max_examples=EXAMPLES or 50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _check_answer(status: int, answer: dict[str, Any], *, too_large: bool) -> None:
    if status == 200:
        assert isinstance(answer["predictions"], list)
    else:
        assert status == (413 if too_large else 400), answer
        assert error_message(answer)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    model_dir = write_tiny_artifact(tmp_path_factory.mktemp("fuzz-model"))
    with start_server(model_dir, config=ServeConfig(limits=FUZZ_LIMITS)) as running:
        yield running


@HTTP
@given(body=BODIES)
def test_prediction_server_answers_every_body_with_200_or_400(
    server: RunningServer, body: bytes
) -> None:
    _check_answer(*post(server.port, "/predict", body), too_large=len(body) > SERVER_LIMIT)


# Header values http.client can send: latin-1 text without line breaks.
HEADER_TEXT = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0xFF, blacklist_characters="\x7f"),
    max_size=12,
).map(str.strip)


# Lengths a client may declare. Both servers answer 413 before reading a body declared too
# large (and discard what follows), so an honest client sends its body only up to SEND_UP_TO.
SEND_UP_TO = 2_000_000


def _declared(length: str) -> int | None:
    return int(length) if length.isascii() and length.isdigit() else None


LENGTHS = (
    HEADER_TEXT
    | st.integers(min_value=0, max_value=SEND_UP_TO).map(str)
    | st.integers(min_value=SEND_UP_TO + 1, max_value=10**25).map(str)
)


def _declared_body(length: str) -> bytes:
    """What an honest client sends after this Content-Length: that many bytes, if it would
    send them at all (up to SEND_UP_TO)."""
    size = _declared(length)
    return b" " * size if size is not None and size <= SEND_UP_TO else b""


@HTTP
@given(length=LENGTHS)
def test_prediction_server_answers_every_content_length(server: RunningServer, length: str) -> None:
    status, answer = post(server.port, "/predict", _declared_body(length), content_length=length)
    assert status in {400, 411, 413} and error_message(answer)


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("fuzz-router")
    with router_over_trainer_server(root, limits=FUZZ_LIMITS) as handle:
        yield handle


@HTTP
@given(body=BODIES, vertex_route=st.booleans())
def test_router_answers_every_body_with_200_or_400(
    router: Any, body: bytes, vertex_route: bool
) -> None:
    path = "/v1/endpoints/shop%20recs:predict" if vertex_route else "/predict"
    _check_answer(*post(router.port, path, body), too_large=len(body) > ROUTER_LIMIT)


@HTTP
@given(length=LENGTHS)
def test_router_answers_every_content_length(router: Any, length: str) -> None:
    status, answer = post(router.port, "/predict", _declared_body(length), content_length=length)
    assert status in {400, 411, 413} and error_message(answer)


# ---- arbitrary bytes and headers, on a raw socket ----

TOKEN = st.text(string.ascii_letters + string.digits + "!#$%&'*+-.^_`|~", min_size=1, max_size=16)
LINE_BYTES = st.binary(max_size=40).map(lambda raw: raw.replace(b"\r", b"").replace(b"\n", b""))
METHODS = st.sampled_from(["POST", "GET", "HEAD", "PUT", "OPTIONS"]) | TOKEN
TARGETS = st.sampled_from(
    [b"/predict", b"/health", b"/v1/endpoints/shop%20recs:predict", b"*", b"http://x/predict"]
) | LINE_BYTES.map(lambda raw: raw.replace(b" ", b""))
VERSIONS = st.sampled_from([b"HTTP/1.1", b"HTTP/1.0", b"HTTP/2", b"HTTP/1.1 x"]) | LINE_BYTES
HEADERS = st.lists(
    st.tuples(TOKEN.map(str.encode) | LINE_BYTES, LINE_BYTES)
    | st.sampled_from(
        [
            (b"Transfer-Encoding", b"gzip"),
            (b"Content-Length", b"3"),
            (b"Expect", b"100-continue"),
            (b"Connection", b"upgrade"),
            (b"Upgrade", b"websocket"),
            (b"Host", b"a\x00b"),
        ]
    ),
    max_size=6,
)


def _request(method: str, target: bytes, version: bytes, headers: Any, body: bytes) -> bytes:
    lines = [method.encode() + b" " + target + b" " + version, b"Host: x"]
    lines += [name + b": " + value for name, value in headers]
    lines.append(b"Content-Length: %d" % len(body))
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


# Garbage, then requests that are nearly right with any part wrong; every one ends its head,
# so the server never waits for more.
RAW_REQUESTS = st.binary(max_size=300).map(lambda raw: ("", raw + b"\r\n\r\n")) | st.builds(
    lambda method, *rest: (method, _request(method, *rest)),
    METHODS,
    TARGETS,
    VERSIONS,
    HEADERS,
    st.sampled_from([GOOD_BODY, b"", b"{}", b"\xff" * 10]),
)


def _check_raw(method: str, data: bytes, answer: tuple[int, Any] | None) -> None:
    assert answer is not None, f"closed without an answer: {data[:200]!r}"
    status, body = answer
    assert status < 500, (data[:200], body)
    if method == "HEAD":
        return
    if status == 200:
        assert isinstance(body, dict), body
    else:
        assert error_message(body) and body["error"]["code"] == status, body


@RAW
@given(request=RAW_REQUESTS)
def test_prediction_server_answers_arbitrary_bytes_and_headers(
    server: RunningServer, request: tuple[str, bytes]
) -> None:
    method, data = request
    _check_raw(method, data, raw_exchange(server.port, data, method=method or None))


@RAW
@given(request=RAW_REQUESTS)
def test_router_answers_arbitrary_bytes_and_headers(
    router: Any, request: tuple[str, bytes]
) -> None:
    method, data = request
    _check_raw(method, data, raw_exchange(router.port, data, method=method or None))


def test_fuzzed_servers_still_answer_a_good_request(server: RunningServer, router: Any) -> None:
    # Runs after the fuzz tests in this module (file order): both stayed up.
    assert post(server.port, "/predict", GOOD_BODY)[0] == 200
    assert post(router.port, "/predict", GOOD_BODY)[0] == 200
