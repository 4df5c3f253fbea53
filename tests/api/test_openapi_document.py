"""The OpenAPI document in api-ref/ is valid, complete and its examples hold."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
import yaml
from openapi_schema_validator import OAS31Validator
from openapi_spec_validator import validate

from tests.openapi_contract import DOCUMENT

METHODS = ("get", "put", "post", "patch", "delete", "head")

# The statuses API.md promises for each operation; the document must list them.
PROMISED = {
    ("put", "/v2/queues/{queue_name}"): {"201", "204", "400", "409"},
    ("get", "/v2/queues/{queue_name}"): {"200", "400"},
    ("patch", "/v2/queues/{queue_name}"): {"200", "400", "404", "409", "415"},
    ("delete", "/v2/queues/{queue_name}"): {"204"},
    ("get", "/v2/queues"): {"200", "400"},
    ("get", "/v2/queues/{queue_name}/stats"): {"200"},
    ("post", "/v2/queues/{queue_name}/purge"): {"204", "400"},
    ("post", "/v2/queues/{queue_name}/messages"): {"201", "400"},
    ("get", "/v2/queues/{queue_name}/messages"): {"200", "400", "404"},
    ("delete", "/v2/queues/{queue_name}/messages"): {"200", "204", "400"},
    ("get", "/v2/queues/{queue_name}/messages/{message_id}"): {"200", "404"},
    ("delete", "/v2/queues/{queue_name}/messages/{message_id}"): {"204", "400", "403"},
    ("post", "/v2/queues/{queue_name}/claims"): {"201", "204", "400"},
    ("get", "/v2/queues/{queue_name}/claims/{claim_id}"): {"200", "404"},
    ("patch", "/v2/queues/{queue_name}/claims/{claim_id}"): {"204", "404"},
    ("delete", "/v2/queues/{queue_name}/claims/{claim_id}"): {"204"},
    ("get", "/v2/ping"): {"204", "503"},
    ("head", "/v2/ping"): {"204", "503"},
    ("get", "/v2/health"): {"200", "403"},
    ("put", "/v2/pools/{pool_name}"): {"201", "400", "403", "409"},
    ("get", "/v2/pools/{pool_name}"): {"200", "404"},
    ("patch", "/v2/pools/{pool_name}"): {"200", "400", "404"},
    ("delete", "/v2/pools/{pool_name}"): {"204", "403"},
    ("get", "/v2/pools"): {"200"},
    ("put", "/v2/flavors/{flavor_name}"): {"201", "400"},
    ("get", "/v2/flavors/{flavor_name}"): {"200", "404"},
    ("patch", "/v2/flavors/{flavor_name}"): {"200", "404"},
    ("delete", "/v2/flavors/{flavor_name}"): {"204"},
    ("get", "/v2/flavors"): {"200"},
}

# Schemas clients meet most; each must carry at least one example.
MAIN_SCHEMAS = (
    "Error", "QueueMetadata", "QueueMetadataView", "QueuePatch", "QueueList",
    "QueueStats", "PostMessagesRequest", "PostMessagesResult", "Message",
    "MessageBatch", "MessageList", "ClaimRequest", "Claim", "Health", "Pool",
    "PoolView", "PoolList", "Flavor", "FlavorView", "FlavorList", "HomeDocument",
)


@cache
def document() -> dict[str, Any]:
    with open(DOCUMENT, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def operations() -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, item[method])
        for path, item in document()["paths"].items()
        for method in METHODS
        if method in item
    ]


def api_operations() -> list[tuple[str, str]]:
    """Operations under /v2/ (the /v2 home document needs no headers)."""
    return [(m, p) for m, p, _ in operations() if p.startswith("/v2/")]


def schema_validator(schema: dict[str, Any]) -> Any:
    """A 3.1 schema validator that resolves #/components/... refs in the document."""
    rooted = {**schema, "components": document()["components"]}
    return OAS31Validator(rooted, format_checker=OAS31Validator.FORMAT_CHECKER)


def component(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def resolve(node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref is None:
        return node
    found: Any = document()
    for part in ref.removeprefix("#/").split("/"):
        found = found[part]
    return resolve(found)


def test_document_is_valid_openapi() -> None:
    validate(document())
    assert document()["openapi"].startswith("3.1")


def test_every_api_md_operation_is_documented_with_its_statuses() -> None:
    documented = {(m, p): set(op["responses"]) for m, p, op in operations()}
    missing_ops = sorted(set(PROMISED) - set(documented))
    assert not missing_ops, f"operations of API.md missing from the document: {missing_ops}"
    gaps = {
        key: sorted(statuses - documented[key])
        for key, statuses in PROMISED.items()
        if statuses - documented[key]
    }
    assert not gaps, f"statuses promised by API.md but not documented: {gaps}"


@pytest.mark.parametrize(("method", "path"), api_operations())
def test_operation_has_success_and_error_responses(method: str, path: str) -> None:
    responses = document()["paths"][path][method]["responses"]
    assert "default" not in responses, "a default response would hide undocumented statuses"
    assert any(s.startswith("2") for s in responses), f"{method} {path}: no success response"
    # Every /v2 call can meet a bad header, a refused Accept, an unreachable store.
    assert {"400", "406", "503"} <= set(responses), f"{method} {path}: {sorted(responses)}"


@pytest.mark.parametrize(("method", "path"), [(m, p) for m, p, _ in operations()])
def test_error_responses_use_the_error_schema(method: str, path: str) -> None:
    for status, response in document()["paths"][path][method]["responses"].items():
        if status < "400" or method == "head":
            continue
        content = resolve(response)["content"]
        assert list(content) == ["application/json"], (method, path, status)
        assert content["application/json"]["schema"] == component("Error"), (
            method, path, status)


def test_home_document_needs_no_headers() -> None:
    home = document()["paths"]["/v2"]["get"]
    assert "parameters" not in home and "parameters" not in document()["paths"]["/v2"]
    assert set(home["responses"]) == {"200", "406"}


@pytest.mark.parametrize(("method", "path"), api_operations())
def test_every_operation_requires_client_id_and_project(method: str, path: str) -> None:
    item = document()["paths"][path]
    params = [resolve(p) for p in item.get("parameters", []) + item[method].get("parameters", [])]
    required_headers = {p["name"] for p in params if p["in"] == "header" and p["required"]}
    assert required_headers == {"Client-ID", "X-Project-ID"}
    client_id = next(p for p in params if p["name"] == "Client-ID")
    assert client_id["schema"]["format"] == "uuid"


def test_main_schemas_have_examples() -> None:
    schemas = document()["components"]["schemas"]
    without = [name for name in MAIN_SCHEMAS if not schemas[name].get("examples")]
    assert not without, f"main schemas without examples: {without}"


def schema_examples() -> list[tuple[str, Any]]:
    return [
        (name, example)
        for name, schema in document()["components"]["schemas"].items()
        for example in schema.get("examples", []) + (
            [schema["example"]] if "example" in schema else [])
    ]


@pytest.mark.parametrize(
    ("name", "example"), schema_examples(), ids=[n for n, _ in schema_examples()]
)
def test_schema_example_validates(name: str, example: Any) -> None:
    errors = [e.message for e in schema_validator(component(name)).iter_errors(example)]
    assert not errors, f"example of {name} does not validate: {errors}"


def test_parameter_examples_validate() -> None:
    for name, param in document()["components"]["parameters"].items():
        if "example" in param:
            validator = schema_validator(param["schema"])
            assert validator.is_valid(param["example"]), name


# Instances that break one documented rule each: the document must refuse them,
# proving the constraint is written down and not just described.
MESSAGE = {
    "id": "m1", "href": "/v2/queues/q/messages/m1", "ttl": 3600, "age": 0,
    "body": None, "claim_count": 0,
}
HISTORY = {
    "queue": "q", "reason": "max_claim_count", "count": 1,
    "first_time": "2026-11-22T15:17:40Z", "last_time": "2026-11-22T15:17:40Z",
}


@pytest.mark.parametrize(
    ("name", "instance"),
    [
        ("Message", {k: v for k, v in MESSAGE.items() if k != "claim_count"}),
        ("Message", {**MESSAGE, "claim_count": -1}),
        ("Message", {**MESSAGE, "history": []}),
        ("Message", {**MESSAGE, "history": [{**HISTORY, "count": 0}]}),
        ("Message", {**MESSAGE, "history": [{**HISTORY, "last_time": "yesterday"}]}),
        ("Message", {**MESSAGE, "internal_marker": 3}),
        ("QueueMetadata", {"_max_claim_count": 0}),
        ("QueueMetadata", {"_max_claim_count": "3"}),
        ("QueueMetadata", {"_dead_letter_queue": "not a queue!"}),
        ("QueueMetadata", {"_dead_letter_queue": "q" * 65}),
        ("QueueMetadata", {"_dead_letter_queue_messages_ttl": 59}),
        ("QueueMetadata", {"_dead_letter_queue_messages_ttl": 1209601}),
        ("QueueMetadata", {"_default_message_ttl": 59}),
        ("QueueMetadata", {"_default_message_delay": 901}),
        ("QueueMetadata", {"_max_messages_post_size": 0}),
        ("QueueMetadataView", {"_max_claim_count": 3}),
        ("PostMessagesRequest", {"messages": []}),
        ("PurgeRequest", {}),
        ("PostMessagesRequest", {"messages": [{"ttl": 60}]}),
        ("PostMessagesRequest", {"messages": [{"body": 1, "delay": -1}]}),
        ("ClaimRequest", {"ttl": 59}),
        ("ClaimRequest", {"grace": 43201}),
        ("QueuePatch", [{"op": "move", "path": "/metadata/a"}]),
        ("QueuePatch", [{"op": "add", "path": "/name", "value": 1}]),
        ("Error", {"title": "Bad"}),
        ("PoolPatch", {}),
        ("Flavor", {"pool_list": []}),
        ("Health", {"storage_reachable": "yes", "operation_status": {}}),
        ("Health", {"pool-1": {"storage_reachable": True}}),
    ],
)
def test_document_refuses_what_the_api_refuses(name: str, instance: Any) -> None:
    assert not schema_validator(component(name)).is_valid(instance)


def test_unset_reserved_keys_may_be_null() -> None:
    view = {
        "_default_message_ttl": 3600, "_default_message_delay": 0,
        "_max_messages_post_size": 262144, "_max_claim_count": None,
        "_dead_letter_queue": None, "_dead_letter_queue_messages_ttl": None,
        "_enable_encrypt_messages": False, "anything": {"nested": True},
    }
    assert schema_validator(component("QueueMetadataView")).is_valid(view)
