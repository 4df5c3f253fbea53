"""Check real HTTP exchanges against the OpenAPI document in api-ref/.

Validation itself is openapi-core's; this module only adapts an exchange
(from a falcon TestClient result or an httpx response) to it and turns its
errors into one readable AssertionError naming the path template, the
status and the schema error.

    contract = OpenAPIContract()
    result = client.simulate_get("/v2/queues/q", headers=HEADERS)
    contract.check(Exchange.from_falcon(result, "GET", "/v2/queues/q", headers=HEADERS))

    contract.check(Exchange.from_httpx(httpx.get(url, headers=HEADERS)))

``CheckedClient`` wraps a falcon TestClient so that every call is checked.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from openapi_core import Config, OpenAPI
from openapi_core.templating.paths.finders import APICallPathFinder
from openapi_core.testing import MockRequest, MockResponse

DOCUMENT = Path(__file__).resolve().parent.parent / "api-ref" / "openapi.yaml"
JSON_PATCH = "application/openstack-messaging-v2.0-json-patch"
JSON_HOME = "application/json-home"
HOST_URL = "http://zq.test"

QueryPairs = tuple[tuple[str, str], ...]


class ContractViolation(AssertionError):
    """An exchange that the OpenAPI document does not allow."""


@dataclass(frozen=True)
class Exchange:
    """One request and the response it got, as bytes and plain mappings."""

    method: str
    path: str
    status: int
    query: QueryPairs = ()
    request_headers: Mapping[str, str] = field(default_factory=dict)
    request_body: bytes | None = None
    response_headers: Mapping[str, str] = field(default_factory=dict)
    response_body: bytes = b""

    @classmethod
    def from_falcon(
        cls,
        result: Any,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        body: bytes | str | None = None,
        json_body: Any = None,
    ) -> Exchange:
        """An exchange from a ``falcon.testing.Result`` and the request that produced it.

        ``path`` may carry a query string; ``params`` are added to it.
        ``json_body`` is what was passed as ``json=`` to simulate_request.
        """
        headers = dict(headers or {})
        if json_body is not None:  # falcon then forces this Content-Type
            body = json.dumps(json_body)
            headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
            headers["Content-Type"] = "application/json"
        path, query = _split_query(path, params)
        return cls(
            method=method.upper(),
            path=path,
            status=result.status_code,
            query=query,
            request_headers=headers,
            request_body=body.encode() if isinstance(body, str) else body,
            response_headers=dict(result.headers),
            response_body=result.content or b"",
        )

    @classmethod
    def from_httpx(cls, response: Any) -> Exchange:
        """An exchange from an ``httpx.Response`` (its ``.request`` is the request)."""
        request = response.request
        return cls(
            method=request.method.upper(),
            path=request.url.path,
            status=response.status_code,
            query=tuple(request.url.params.multi_items()),
            request_headers=dict(request.headers),
            request_body=request.content or None,
            response_headers=dict(response.headers),
            response_body=response.content or b"",
        )

    def describe(self) -> str:
        query = "&".join(f"{k}={v}" for k, v in self.query)
        return f"{self.method} {self.path}{'?' + query if query else ''} -> {self.status}"


@dataclass(frozen=True)
class Operation:
    """Where an exchange landed in the document."""

    template: str
    method: str
    spec: Any  # openapi-core's SchemaPath of the operation

    def documented_statuses(self) -> list[str]:
        return sorted((self.spec / "responses").keys())

    def response_has_content(self, status: int) -> bool:
        responses = self.spec / "responses"
        key = str(status) if str(status) in responses else None
        return key is not None and "content" in (responses / key)


class OpenAPIContract:
    """The API document, able to check exchanges against itself."""

    def __init__(self, document: Path = DOCUMENT) -> None:
        self.document = document
        self.api = OpenAPI.from_file_path(
            str(document),
            config=Config(extra_media_type_deserializers={
                JSON_PATCH: json.loads, JSON_HOME: json.loads}),
        )
        self._finder = APICallPathFinder(self.api.spec)

    def operation(self, method: str, path: str) -> Operation:
        """The path template and operation of a request; ContractViolation if undocumented."""
        try:
            found = self._finder.find(method.lower(), HOST_URL + path)
        except Exception as exc:  # PathNotFound, OperationNotFound, ServerNotFound
            raise ContractViolation(
                f"{method.upper()} {path}: not in {self.document.name}: {exc}"
            ) from exc
        return Operation(found.path_result.pattern, method.upper(), found.operation)

    def request_errors(self, exchange: Exchange) -> list[str]:
        """Why the document refuses the request (empty when it accepts it)."""
        result = self.api.unmarshal_request(_request(exchange))
        return [_explain(err) for err in result.errors]

    def response_errors(self, exchange: Exchange) -> list[str]:
        """Why the document refuses the response to this request (empty when allowed)."""
        operation = self.operation(exchange.method, exchange.path)
        result = self.api.unmarshal_response(_request(exchange), _response(exchange))
        errors = [_explain(err) for err in result.errors]
        if not errors and exchange.response_body and not operation.response_has_content(
            exchange.status
        ):
            errors.append(
                f"documented without a body, got {exchange.response_body[:200]!r}"
            )
        return errors

    def check(self, exchange: Exchange, *, request_valid: bool = True) -> Operation:
        """Raise ContractViolation unless the exchange follows the document.

        The response must be one the operation documents for its status,
        with a body and headers matching it. ``request_valid=True`` also
        requires the document to accept the request; pass False for a
        request that is meant to be bad: the document must then refuse it
        too (it must describe the constraint the server enforced).
        """
        operation = self.operation(exchange.method, exchange.path)
        where = f"{exchange.describe()} [{operation.method} {operation.template}]"
        problems = []
        request_errors = self.request_errors(exchange)
        if request_valid and request_errors:
            problems += [f"request: {e}" for e in request_errors]
        if not request_valid and not request_errors:
            problems.append("request: the document accepts this request, "
                            "but the test expects it to be invalid")
        response_errors = self.response_errors(exchange)
        if any("Unknown response http status" in e for e in response_errors):
            response_errors = [
                f"status {exchange.status} is not documented "
                f"(documented: {', '.join(operation.documented_statuses())})"
            ]
        problems += [f"response: {e}" for e in response_errors]
        if problems:
            body = exchange.response_body[:500].decode("utf-8", "replace")
            raise ContractViolation(
                f"{where}:\n  " + "\n  ".join(problems) + f"\n  response body: {body}"
            )
        return operation


@cache
def default_contract() -> OpenAPIContract:
    """The contract of api-ref/openapi.yaml, loaded once per process."""
    return OpenAPIContract()


class CheckedClient:
    """A falcon TestClient whose every response is checked against the document."""

    def __init__(
        self,
        client: Any,
        headers: Mapping[str, str] | None = None,
        contract: OpenAPIContract | None = None,
    ) -> None:
        self.client = client
        self.headers = dict(headers or {})
        self.contract = contract or default_contract()

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str | None] | None = None,
        json: Any = None,
        body: bytes | str | None = None,
        request_valid: bool = True,
    ) -> Any:
        """Simulate the request, check the exchange, return the falcon Result.

        A header given as None in ``headers`` is left out of the request.
        """
        merged = {**self.headers, **(headers or {})}
        sent = {k: v for k, v in merged.items() if v is not None}
        result = self.client.simulate_request(
            method, path, params=params, headers=sent, json=json, body=body
        )
        exchange = Exchange.from_falcon(
            result, method, path, params=params, headers=sent, body=body, json_body=json
        )
        self.contract.check(exchange, request_valid=request_valid)
        return result

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.request("GET", path, **kwargs)

    def head(self, path: str, **kwargs: Any) -> Any:
        return self.request("HEAD", path, **kwargs)

    def put(self, path: str, **kwargs: Any) -> Any:
        return self.request("PUT", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> Any:
        return self.request("POST", path, **kwargs)

    def patch(self, path: str, **kwargs: Any) -> Any:
        return self.request("PATCH", path, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> Any:
        return self.request("DELETE", path, **kwargs)


def _split_query(path: str, params: Mapping[str, Any] | None) -> tuple[str, QueryPairs]:
    path, _, query_string = path.partition("?")
    pairs = parse_qsl(query_string, keep_blank_values=True)
    for key, value in (params or {}).items():
        # falcon's to_query_str joins a list with commas, as Zaqar clients do.
        values = value if isinstance(value, list | tuple) else [value]
        pairs.append((key, ",".join(_query_text(v) for v in values)))
    return path, tuple(pairs)


def _query_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _header(headers: Mapping[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name.lower():
            return value
    return None


def _request(exchange: Exchange) -> MockRequest:
    content_type = _header(exchange.request_headers, "Content-Type") or "application/json"
    return MockRequest(
        HOST_URL,
        exchange.method,
        exchange.path,
        args=list(exchange.query),  # a list of pairs keeps repeated keys
        headers=dict(exchange.request_headers),
        data=exchange.request_body,
        content_type=content_type.lower(),
    )


def _response(exchange: Exchange) -> MockResponse:
    content_type = _header(exchange.response_headers, "Content-Type") or ""
    return MockResponse(
        exchange.response_body,
        status_code=exchange.status,
        headers=dict(exchange.response_headers),
        content_type=content_type.lower(),
    )


def _explain(error: BaseException) -> str:
    """openapi-core's error with the schema errors behind it, each at its JSON path."""
    text = f"{type(error).__name__}: {error}"
    details = list(_schema_errors(error))
    if details:
        text = f"{type(error).__name__}: " + "; ".join(details)
    return text


def _schema_errors(error: BaseException | None) -> Iterable[str]:
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        for schema_error in getattr(error, "schema_errors", None) or ():
            yield _describe_schema_error(schema_error)
        error = error.__cause__ or error.__context__


def _describe_schema_error(error: Any) -> str:
    location = "$" + "".join(
        f"[{p}]" if isinstance(p, int) else f".{p}" for p in getattr(error, "absolute_path", ())
    )
    message = getattr(error, "message", str(error))
    # anyOf/oneOf/allOf failures hide the useful part in their sub-errors.
    context: Sequence[Any] = getattr(error, "context", None) or ()
    if context:
        best = max(context, key=lambda e: len(e.absolute_path))
        message += f" (for example: {best.message})"
    return f"at {location}: {message}"
