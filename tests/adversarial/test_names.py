"""Names are matched whole and are never a path segment of their own.

``PUT /v2/queues/nl%0A`` was created (the pattern's ``$`` matched before a
final newline), and a queue named ``..`` (sent with ``curl --path-as-is``)
was created with hrefs such as ``/v2/queues/../messages`` that point
elsewhere once a client normalises them.
"""

from __future__ import annotations

import pytest

from tests.api.helpers import Api, assert_error

BAD_NAMES = ["nl%0A", "%0Anl", "nl%0D%0A", ".", "..", "nl%00"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_queue_names_are_400_everywhere(api: Api, name: str):
    assert_error(api.put(f"/v2/queues/{name}"), 400, "Queue name")
    assert_error(api.post(f"/v2/queues/{name}/messages", json={"messages": [{"body": 1}]}),
                 400, "Queue name")
    assert_error(api.get(f"/v2/queues/{name}/stats"), 400, "Queue name")
    assert api.get("/v2/queues").json["queues"] == []


@pytest.mark.parametrize("target", ["dlq\n", "\ndlq", ".", "..", "dlq\x00"])
def test_bad_dead_letter_queue_names_are_400(api: Api, target: str):
    result = api.put("/v2/queues/q", json={"_dead_letter_queue": target,
                                           "_max_claim_count": 1})
    assert_error(result, 400, "_dead_letter_queue")
    assert api.put("/v2/queues/q").status_code == 201
    patch = [{"op": "add", "path": "/metadata/_dead_letter_queue", "value": target}]
    assert_error(api.patch_metadata("q", patch), 400, "_dead_letter_queue")
    assert "_dead_letter_queue" not in api.get("/v2/queues/q").json
    assert [q["name"] for q in api.get("/v2/queues").json["queues"]] == ["q"]


@pytest.mark.parametrize("flavor", ["f\n", ".."])
def test_bad_flavor_names_in_metadata_are_400(api: Api, flavor: str):
    assert_error(api.put("/v2/queues/q", json={"_flavor": flavor}), 400, "_flavor")


@pytest.mark.parametrize("name", ["...", "a..b", ".hidden", "v1.2"])
def test_names_with_dots_inside_still_work(api: Api, name: str):
    assert api.put(f"/v2/queues/{name}").status_code == 201
    assert api.post_messages(name, {"body": 1})
    assert [q["name"] for q in api.get("/v2/queues").json["queues"]] == [name]
