"""Fuzz every operation of api-ref/openapi.yaml against the falcon app, in-process.

schemathesis generates requests from the document, both valid ones
(positive: they reach the endpoints, with the document's example
``Client-ID``, ``X-Project-ID`` and ``X-Roles: member,admin``) and invalid
ones (negative: wrong types, bad or missing headers, out-of-range values),
and sends them to the WSGI app on a fresh SQLite storage. Every answer must
be no 5xx, a status code the document lists for the operation, and a body
that conforms to the document's schema for it.

``ZQ_FUZZ_EXAMPLES`` sets the examples per operation (default: a bounded
CI run); docs/security.md gives the command of the longer run. Pooling is
off: with it on, generated pool URIs would make the server connect to
arbitrary hosts.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    response_schema_conformance,
    status_code_conformance,
)

from zq.api import create_app
from zq.config import Config
from zq.storage import open_storage
from zq.storage.sql import migrate

pytestmark = pytest.mark.slow

SPEC = Path(__file__).resolve().parents[2] / "api-ref" / "openapi.yaml"
CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance]
EXAMPLES = int(os.environ.get("ZQ_FUZZ_EXAMPLES", "25"))
SENT: Counter[str] = Counter()  # requests per generation mode
ANSWERED: Counter[int] = Counter()  # responses per status code


@schemathesis.serializer("application/openstack-messaging-v2.0-json-patch")
def json_patch(ctx: Any, value: Any) -> bytes:
    """PATCH bodies of queues are JSON under their own media type."""
    return json.dumps(value).encode()


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The document, bound to a fresh app on a fresh SQLite file."""
    uri = f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'zq.sqlite3'}"
    migrate.upgrade(uri)
    storage = open_storage(uri)
    config = Config().with_overrides(signed_urls={"secret_key": "fuzz-secret-key"})
    schema = schemathesis.openapi.from_path(SPEC)
    schema.app = create_app(config, storage=storage)
    yield schema
    storage.close()
    total = sum(SENT.values())
    print(f"\nfuzzed {total} requests ({dict(SENT)}), {EXAMPLES} examples per operation, "
          f"statuses {sorted(ANSWERED.items())}")


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
def test_every_generated_request_gets_a_documented_answer(case: Any) -> None:
    SENT[case.meta.generation.mode.value if case.meta else "explicit"] += 1
    response = case.call()
    ANSWERED[response.status_code] += 1
    case.validate_response(response, checks=CHECKS)
