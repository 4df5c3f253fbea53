"""The API test client and assertions shared by the API tests."""

from __future__ import annotations

import uuid
from typing import Any

import falcon
import falcon.testing

PATCH_TYPE = "application/openstack-messaging-v2.0-json-patch"


class Api:
    """A TestClient that sends the Zaqar headers of one client in one project."""

    def __init__(self, app: falcon.App, project: str, client_id: str | None = None) -> None:
        self.app = app
        self.project = project
        self.client_id = client_id or str(uuid.uuid4())
        self.client = falcon.testing.TestClient(app)

    def other_client(self) -> Api:
        """The same project seen by another Client-ID."""
        return Api(self.app, self.project)

    def headers(self, extra: dict[str, str] | None) -> dict[str, str]:
        headers = {"Client-ID": self.client_id, "X-Project-ID": self.project}
        headers.update(extra or {})
        return headers

    def request(self, method: str, path: str, *, headers: dict[str, str] | None = None,
                **kwargs: Any) -> falcon.testing.Result:
        if "?" in path:  # an href from a response: TestClient wants the query apart
            path, kwargs["query_string"] = path.split("?", 1)
        return self.client.simulate_request(
            method, path, headers=self.headers(headers), **kwargs
        )

    def get(self, path: str, **kwargs: Any) -> falcon.testing.Result:
        return self.request("GET", path, **kwargs)

    def put(self, path: str, **kwargs: Any) -> falcon.testing.Result:
        return self.request("PUT", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> falcon.testing.Result:
        return self.request("POST", path, **kwargs)

    def patch(self, path: str, **kwargs: Any) -> falcon.testing.Result:
        return self.request("PATCH", path, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> falcon.testing.Result:
        return self.request("DELETE", path, **kwargs)

    def head(self, path: str, **kwargs: Any) -> falcon.testing.Result:
        return self.request("HEAD", path, **kwargs)

    # -- shortcuts for arranging a test ---------------------------------

    def patch_metadata(self, queue: str, ops: list[dict[str, Any]]) -> falcon.testing.Result:
        return self.patch(
            f"/v2/queues/{queue}", json=ops,
            headers={"Content-Type": PATCH_TYPE},
        )

    def post_messages(self, queue: str, *messages: dict[str, Any]) -> list[str]:
        result = self.post(f"/v2/queues/{queue}/messages", json={"messages": list(messages)})
        assert result.status_code == 201, result.text
        return [href.rsplit("/", 1)[1] for href in result.json["resources"]]

    def claim(self, queue: str, *, limit: int = 10, ttl: int = 60,
              grace: int = 60) -> falcon.testing.Result:
        return self.post(
            f"/v2/queues/{queue}/claims", params={"limit": limit},
            json={"ttl": ttl, "grace": grace},
        )


def assert_error(result: falcon.testing.Result, status: int, fragment: str = "") -> None:
    """A JSON error response with a title, a description and the status."""
    assert result.status_code == status, result.text
    body = result.json
    assert set(body) == {"title", "description"}, body
    assert body["title"] and body["description"]
    assert fragment in body["description"], body
