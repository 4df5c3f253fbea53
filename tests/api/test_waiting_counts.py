"""The waiting claims of a server in ``GET .../stats`` and ``GET .../consumers`` (zq).

The claims themselves wait in zq.buffered_wsgi (tests/e2e/test_client_long_poll.py
runs them for real); here the census they report to is fed directly, and the
answers must show it, per queue and project, beside what the storage says.
"""

from __future__ import annotations

import pytest

from tests.api.helpers import Api
from zq.api import create_app
from zq.metrics.waiting import WaitingCensus


@pytest.fixture
def census() -> WaitingCensus:
    return WaitingCensus()


@pytest.fixture
def api(config, storage, clock, census, project) -> Api:
    return Api(create_app(config, storage=storage, clock=clock, waiting=census), project)


def test_stats_count_the_claims_waiting_on_the_queue(api, census, project):
    assert api.get("/v2/queues/q/stats").json["waiting"] == 0
    census.started(project, "q", "a")
    census.started(project, "q", "b")
    census.started(project, "other", "a")
    census.started("another-project", "q", "a")
    answer = api.get("/v2/queues/q/stats").json
    assert answer["waiting"] == 2
    assert answer["messages"]["total"] == 0  # Zaqar's counts unchanged
    census.ended(project, "q", "b")
    assert api.get("/v2/queues/q/stats").json["waiting"] == 1


def test_consumers_show_each_client_ids_waiting_claims(api, census, project):
    api.post_messages("q", {"body": 1, "ttl": 3600})
    assert api.claim("q", limit=1).status_code == 201
    census.started(project, "q", api.client_id)
    census.started(project, "q", "only-waits")
    census.started(project, "q", "only-waits")
    rows = {c["client_id"]: c for c in api.get("/v2/queues/q/consumers").json["consumers"]}
    assert rows[api.client_id]["waiting"] == 1
    assert rows[api.client_id]["live_claims"] == 1
    assert rows["only-waits"] == {"client_id": "only-waits", "last_claim": None,
                                  "live_claims": 0, "lapsed_claims": 0, "suspected": False,
                                  "waiting": 2}
