"""The ``wait`` query parameter of claims, as HTTP sees it (the waiting itself: tests/waiting)."""

from __future__ import annotations

import pytest

from tests.api.helpers import assert_error
from zq.config import Config


@pytest.mark.parametrize("wait", ["-1", "20.5", "21", "abc", "nan", "inf", ""])
def test_a_bad_wait_is_400_naming_the_limit(api, wait):
    result = api.post("/v2/queues/q/claims", params={"wait": wait}, json={})
    assert_error(result, 400, "between 0 and 20 ([limits] max_claim_wait)")


def test_the_limit_follows_the_configuration(storage, clock, project):
    from tests.api.helpers import Api
    from zq.api import create_app

    config = Config().with_overrides(limits={"max_claim_wait": 5})
    api = Api(create_app(config, storage=storage, clock=clock), project)
    assert_error(api.post("/v2/queues/q/claims", params={"wait": "6"}, json={}), 400,
                 "between 0 and 5")
    assert api.post("/v2/queues/q/claims", params={"wait": "5"}, json={}).status_code == 204


def test_without_the_event_loop_a_waiting_claim_answers_as_without_wait(api):
    # The falcon app alone (no zq.buffered_wsgi) cannot hold a request: it
    # answers at once, as a claim without wait does.
    assert api.post("/v2/queues/q/claims", params={"wait": "1.5"}, json={}).status_code == 204
    api.post_messages("q", {"body": 1})
    result = api.post("/v2/queues/q/claims", params={"wait": "1.5"}, json={})
    assert result.status_code == 201 and result.json["messages"][0]["body"] == 1


def test_a_pop_cannot_wait(api):
    api.post_messages("q", {"body": 1})
    result = api.delete("/v2/queues/q/messages", params={"pop": 1, "wait": 5})
    assert_error(result, 400, '"wait" applies to claims only')
    assert api.get("/v2/queues/q/stats").json["messages"]["total"] == 1
