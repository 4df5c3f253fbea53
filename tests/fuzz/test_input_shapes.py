"""Hypothesis tries the input shapes an adversarial run found, on every backend.

Ids, markers, names, query parameters, nesting depths and integers drawn
from the whole of Unicode (NUL and other control characters, huge numbers,
long text), sent to the API over each test backend: the answer is always one
of the documented ones for that shape, never a 5xx. The shapes that were
500s are examples every run tries (docs/security.md, "Refused input").
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.api.helpers import Api
from tests.backends import StorageFactory, backend_name, storage_factory
from zq.api import create_app
from zq.clock import ManualClock
from zq.config import Config

__all__ = ["backend_name", "storage_factory"]

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("ZQ_FUZZ_EXAMPLES", "25"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))
NAME = re.compile(r"[a-zA-Z0-9_\-.]{1,64}")

# Text a client can put in a path segment or a query value: anything,
# control characters and NUL included, and sometimes very long.
any_text = st.one_of(
    st.text(max_size=80),
    st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=80),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.builds(lambda c, n: c * n, st.characters(), st.integers(1, 3000)),
)


@pytest.fixture(scope="module")
def api(storage_factory: StorageFactory) -> Iterator[Api]:
    clock = ManualClock()
    storage = storage_factory(clock)
    config = Config().with_overrides(signed_urls={"secret_key": "fuzz-key"})
    client = Api(create_app(config, storage=storage, clock=clock), f"p-{uuid.uuid4().hex}")
    [message_id] = client.post_messages("q", {"body": 1})
    client.message_id = message_id  # type: ignore[attr-defined]
    yield client
    storage.close()


def segment_of(value: str) -> str:
    """``value`` as one path segment; an empty one would be another route."""
    return quote(value, safe="") or "%20"


def assert_answer(result, allowed: set[int]) -> None:
    assert result.status_code in allowed, (result.status_code, result.text[:300])
    if result.status_code >= 400:
        assert set(result.json) == {"title", "description"}


@FUZZ
@given(value=any_text)
@example(value="\x00")
@example(value="0123456789abcdef\x000123456789abcdef")
@example(value="x" * 5000)
def test_ids_in_paths_and_queries(api: Api, value: str):
    if "/" not in value:  # a %2F reaches the app as "/": another route
        segment = segment_of(value)
        assert_answer(api.get(f"/v2/queues/q/messages/{segment}"), {404})
        assert_answer(api.get(f"/v2/queues/q/claims/{segment}"), {404})
        assert_answer(api.patch(f"/v2/queues/q/claims/{segment}", json={}), {404})
        assert_answer(api.delete(f"/v2/queues/q/claims/{segment}"), {204})
    assert_answer(api.get("/v2/queues/q/messages", params={"ids": value}), {400, 404})
    assert_answer(api.delete("/v2/queues/q/messages",
                             params={"ids": f"{'0' * 24},{value}"}), {204, 400})
    if value:  # an empty claim_id is no claim id: that deletes a free message
        # No claim holds the free message, whatever the claim id.
        result = api.delete(f"/v2/queues/q/messages/{api.message_id}",  # type: ignore
                            params={"claim_id": value})
        assert_answer(result, {400})
    assert_answer(api.get(f"/v2/queues/q/messages/{api.message_id}"), {200})  # type: ignore


@FUZZ
@given(value=any_text)
@example(value=str(2**63))
@example(value="9223372036854775808")
@example(value="\x00")
def test_markers_and_listing_parameters(api: Api, value: str):
    result = api.get("/v2/queues/q/messages", params={"marker": value, "echo": "true"})
    assert_answer(result, {200})
    for parameter in ("marker", "name"):
        result = api.get("/v2/queues", params={parameter: value})
        assert_answer(result, {200} if not value or NAME.fullmatch(value) else {400})
    for parameter, path in (("limit", "/v2/queues"), ("limit", "/v2/queues/q/messages"),
                            ("pop", "/v2/queues/q/messages")):
        method = "DELETE" if parameter == "pop" else "GET"
        assert_answer(api.request(method, path, params={parameter: value}), {200, 400})


@FUZZ
@given(name=any_text)
@example(name="nl\n")
@example(name="..")
@example(name=".")
def test_queue_names(api: Api, name: str):
    valid = bool(NAME.fullmatch(name)) and name not in (".", "..")
    if "/" not in name:  # a %2F reaches the app as "/": another route
        assert_answer(api.put(f"/v2/queues/{segment_of(name)}"), {201, 204} if valid else {400})
    result = api.put("/v2/queues/fuzz-dl", json={"_dead_letter_queue": name})
    assert_answer(result, {201, 204, 409} if valid else {400})


@FUZZ
@given(depth=st.integers(0, 1100), wrapper=st.sampled_from(["[", "{\"k\":"]))
@example(depth=255, wrapper="[")
@example(depth=1021, wrapper="[")
def test_nesting_depth(api: Api, depth: int, wrapper: str):
    closer = "]" if wrapper == "[" else "}"
    body = wrapper * depth + "0" + closer * depth
    limit = Config().limits.max_json_depth
    result = api.post("/v2/queues/q/messages", body=f'{{"messages":[{{"body":{body}}}]}}')
    assert_answer(result, {201} if depth + 3 <= limit else {400})
    result = api.put("/v2/queues/deep", body=f'{{"k":{body}}}')
    assert_answer(result, {201, 204} if depth + 1 <= limit else {400})


@FUZZ
@given(number=st.integers(-(2**80), 2**80))
@example(number=2**64)
@example(number=-(2**63) - 1)
def test_integers_in_bodies(api: Api, number: int):
    result = api.post("/v2/queues/q/messages", body=f'{{"messages":[{{"body":{number}}}]}}')
    exact = -(2**63) <= number < 2**64
    assert_answer(result, {201} if exact else {400})
    if exact:
        message = api.get(result.json["resources"][0])
        assert message.json["body"] == number


@FUZZ
@given(expires=st.one_of(
    st.datetimes().map(lambda d: d.isoformat()),
    st.builds(lambda d, h, m: f"{d.isoformat()}{'+' if h >= 0 else '-'}{abs(h):02d}:{m:02d}",
              st.datetimes(), st.integers(-23, 23), st.integers(0, 59)),
    any_text,
))
@example(expires="9999-12-31T23:59:59-14:00")
@example(expires="0001-01-01T00:00:00+14:00")
def test_signed_url_expiries(api: Api, expires: str):
    headers = {"URL-Signature": "0" * 64, "URL-Expires": expires, "URL-Methods": "GET",
               "URL-Paths": "/v2/queues/q/messages"}
    assert_answer(api.get("/v2/queues/q/messages", headers=headers), {403})
    assert_answer(api.post("/v2/queues/q/share", json={"expires": expires}), {200, 400})
