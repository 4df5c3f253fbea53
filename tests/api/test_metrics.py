"""GET /metrics: the exposition, the counters, the per-queue gauges, auth."""

from __future__ import annotations

import itertools

import falcon
import falcon.testing
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.api.helpers import Api, assert_error
from zq.api import create_app
from zq.auth import tokens
from zq.clock import ManualClock
from zq.config import Config
from zq.metrics.tail import RATE_STEP, RATE_WINDOW, SETTLE
from zq.storage.base import Storage

MESSAGE = {"body": {"job": 1}, "ttl": 600}
# Each test's clock starts after every event of the tests before it in the
# session's shared database: the tail counts an event only once it settled,
# so an event from a later moment would hold it back.
STARTS = itertools.count(2_000_000_000, 10_000_000)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(start=next(STARTS))


@pytest.fixture
def config() -> Config:
    # A project label keeps each test's counts apart from the other tests
    # sharing the session's database.
    return Config().with_overrides(metrics={"per_project": True, "cache_seconds": 0})


def scrape(api: Api, clock: ManualClock) -> dict[tuple[str, tuple], float]:
    """Every sample of a scrape made once the events settled, by (name, labels)."""
    clock.advance(SETTLE + 0.1)
    result = falcon.testing.simulate_get(api.app, "/metrics")
    assert result.status_code == 200, result.text
    assert result.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(result.text)
        for sample in family.samples
    }


def value(samples: dict, name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def test_counters_move_by_what_happened(api: Api, clock: ManualClock) -> None:
    p = api.project
    api.put("/v2/queues/src", json={"_max_claim_count": 1, "_dead_letter_queue": "dlq"})
    api.post_messages("work", MESSAGE, MESSAGE, MESSAGE)
    claim = api.claim("work", limit=2)
    first, _ = claim.json["messages"]
    assert api.delete(first["href"]).status_code == 204
    assert api.delete(claim.headers["location"]).status_code == 204  # releases the second
    api.post_messages("src", MESSAGE)
    api.claim("src")
    clock.advance(61)  # the claim lapses; the next claim finds the message exhausted
    assert api.claim("src").status_code == 204
    before = scrape(api, clock)

    assert value(before, "zq_messages_posted_total", project=p) == 4
    assert value(before, "zq_messages_claimed_total", project=p) == 3
    assert value(before, "zq_messages_deleted_total", project=p) == 1
    assert value(before, "zq_messages_released_total", project=p) == 1
    assert value(before, "zq_messages_dead_lettered_total", project=p,
                 reason="max_claim_count") == 1
    assert value(before, "zq_message_post_to_delete_seconds_count", project=p) == 1

    api.post_messages("work", MESSAGE)
    after = scrape(api, clock)
    assert value(after, "zq_messages_posted_total", project=p) == 5  # counted once, not again
    assert value(after, "zq_messages_claimed_total", project=p) == 3


def test_gauges_per_queue(api: Api, clock: ManualClock) -> None:
    p = api.project
    api.put("/v2/queues/src", json={"_max_claim_count": 1, "_dead_letter_queue": "dlq"})
    api.post_messages("src", MESSAGE, {**MESSAGE, "ttl": 900}, MESSAGE)
    api.claim("src", limit=1, ttl=600)
    clock.advance(100)
    samples = scrape(api, clock)
    assert value(samples, "zq_queue_messages", project=p, queue="src", state="free") == 2
    assert value(samples, "zq_queue_messages", project=p, queue="src", state="claimed") == 1
    assert value(samples, "zq_queue_oldest_message_age_seconds", project=p,
                 queue="src") == pytest.approx(100 + SETTLE + 0.1)
    assert value(samples, "zq_queue_oldest_message_ttl_seconds", project=p, queue="src") == 600
    assert value(samples, "zq_queue_dead_letter_messages", project=p, queue="src") == 0
    assert value(samples, "zq_queue_consumers", project=p, queue="src") == 1

    clock.advance(15 * 60)  # no claim for 15 minutes: no consumer
    samples = scrape(api, clock)
    assert value(samples, "zq_queue_consumers", project=p, queue="src") == 0


def test_delayed_gauge_counts_messages_backing_off(api: Api, clock: ManualClock) -> None:
    p = api.project
    api.put("/v2/queues/work", json={"_retry_delay": 600})
    api.post_messages("work", MESSAGE, MESSAGE, {**MESSAGE, "delay": 300})
    claimed = api.claim("work", limit=1)
    assert api.delete(claimed.headers["Location"]).status_code == 204  # released: backs off
    samples = scrape(api, clock)
    assert value(samples, "zq_queue_delayed_messages", project=p, queue="work") == 2
    assert value(samples, "zq_queue_messages", project=p, queue="work", state="free") == 3


def test_rejects_count_whether_retry_or_terminal(api: Api, clock: ManualClock) -> None:
    p = api.project
    api.put("/v2/queues/src", json={"_dead_letter_queue": "dlq"})
    first, second = api.post_messages("src", MESSAGE, MESSAGE)
    claim_id = api.claim("src", limit=2).headers["Location"].rsplit("/", 1)[1]
    reject = "/v2/queues/src/messages/{}/reject"
    assert api.post(reject.format(first), params={"claim_id": claim_id},
                    json={"retry_after": 5}).status_code == 204
    assert api.post(reject.format(second), params={"claim_id": claim_id},
                    json={"description": "boom"}).status_code == 204
    samples = scrape(api, clock)
    assert value(samples, "zq_messages_rejected_total", project=p) == 2
    assert value(samples, "zq_messages_dead_lettered_total", project=p, reason="rejected") == 1


def test_redrives_count_each_moved_message(api: Api, clock: ManualClock) -> None:
    api.put("/v2/queues/src", json={"_dead_letter_queue": "dlq"})
    posted = api.post_messages("src", MESSAGE, MESSAGE)
    claim_id = api.claim("src", limit=2).headers["Location"].rsplit("/", 1)[1]
    for message_id in posted:
        api.post(f"/v2/queues/src/messages/{message_id}/reject", params={"claim_id": claim_id})
    assert api.post("/v2/queues/dlq/redrive", json={"dry_run": True}).json["matched"] == 2
    assert value(scrape(api, clock), "zq_messages_redriven_total", project=api.project) is None
    assert api.post("/v2/queues/dlq/redrive").json["moved"] == 2
    assert value(scrape(api, clock), "zq_messages_redriven_total", project=api.project) == 2


def test_dead_letter_depth_follows_moves(api: Api, clock: ManualClock) -> None:
    p = api.project
    api.put("/v2/queues/src", json={"_max_claim_count": 1, "_dead_letter_queue": "dlq"})
    api.post_messages("src", MESSAGE, MESSAGE)
    api.claim("src")
    clock.advance(61)
    api.claim("src")
    samples = scrape(api, clock)
    assert value(samples, "zq_queue_dead_letter_messages", project=p, queue="src") == 2
    assert value(samples, "zq_queue_messages", project=p, queue="dlq", state="free") == 2


def test_declared_counters_are_present_at_zero(storage: Storage, clock: ManualClock) -> None:
    api = Api(create_app(Config(), storage=storage, clock=clock), "p")
    samples = scrape(api, clock)
    for name in ("zq_messages_redriven_total", "zq_messages_rejected_total",
                 "zq_notifications_sent_total", "zq_notifications_failed_total",
                 "zq_messages_expired_total", "zq_claims_lapsed_total"):
        assert value(samples, name) == 0
    for reason in ("max_claim_count", "rejected", "expired"):
        assert value(samples, "zq_messages_dead_lettered_total", reason=reason) == 0


def test_http_latency_by_route_template_and_status(api: Api, clock: ManualClock) -> None:
    api.post_messages("a-queue", MESSAGE)
    api.post_messages("another", MESSAGE)
    api.get("/v2/queues/missing/messages/nope")
    samples = scrape(api, clock)
    route = "/v2/queues/{queue_name}/messages"
    assert value(samples, "zq_http_request_duration_seconds_count",
                 method="POST", route=route, status="201") == 2
    assert value(samples, "zq_http_request_duration_seconds_count", method="GET",
                 route="/v2/queues/{queue_name}/messages/{message_id}", status="404") == 1


@pytest.mark.filterwarnings("ignore:Unknown REQUEST_METHOD")
def test_made_up_methods_share_one_bounded_label(api: Api, clock: ManualClock) -> None:
    # Any token is a method to HTTP: one series per made-up method would let
    # any client grow the exposition (and each worker's file) without end.
    headers = api.headers(None)
    before = scrape(api, clock)
    for n in range(1, 51):
        falcon.testing.simulate_request(api.app, f"M{n}", "/v2/queues/q/messages",
                                        headers=headers)
    falcon.testing.simulate_request(api.app, "get", "/v2/queues", headers=headers)
    samples = scrape(api, clock)
    methods = {dict(labels).get("method") for name, labels in samples
               if name.startswith("zq_http_request_duration_seconds")}
    assert methods <= {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS",
                       "CONNECT", "TRACE", "other"}, methods
    others = {dict(labels)["route"]: count for (name, labels), count in samples.items()
              if name == "zq_http_request_duration_seconds_count"
              and dict(labels)["method"] == "other"}
    assert others == {"/v2/queues/{queue_name}/messages": 50, "/v2/queues": 1}, others
    # 51 made-up requests added one series per route and status, not one per method
    # (besides the first scrape's own GET /metrics).
    grown = {key for key in samples if key not in before
             and key[0] == "zq_http_request_duration_seconds_count"}
    assert len(grown) <= 3, grown


def test_no_project_label_by_default(storage: Storage, clock: ManualClock, project: str) -> None:
    api = Api(create_app(Config(), storage=storage, clock=clock), project)
    api.post_messages("work", MESSAGE)
    samples = scrape(api, clock)
    labelled = {name: dict(labels) for name, labels in samples if name.startswith("zq_")}
    assert all("project" not in labels for labels in labelled.values()), labelled
    assert value(samples, "zq_queue_messages", queue="work", state="free") is not None


def test_scrape_ignores_the_accept_header_of_the_json_api(api: Api) -> None:
    result = falcon.testing.simulate_get(api.app, "/metrics", headers={"Accept": "text/plain"})
    assert result.status_code == 200


def test_disabled_metrics_are_not_served(storage: Storage, clock: ManualClock) -> None:
    app = create_app(Config().with_overrides(metrics={"enabled": False}),
                     storage=storage, clock=clock)
    assert falcon.testing.simulate_get(app, "/metrics").status_code == 404


def test_metrics_need_the_admin_role_when_auth_is_on(storage, clock, tmp_path) -> None:
    tokens_file = tmp_path / "tokens.json"
    _, member = tokens.issue(tokens_file, "p", ["member"])
    _, admin = tokens.issue(tokens_file, "p", ["admin"])
    config = Config().with_overrides(auth={"strategy": "token",
                                           "tokens_file": str(tokens_file)})
    app = create_app(config, storage=storage, clock=clock)

    def get(token: str | None) -> int:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return falcon.testing.simulate_get(app, "/metrics", headers=headers).status_code

    assert get(None) == 401
    assert get(member) == 403
    assert get(admin) == 200


def test_expiry_and_lapsed_claims_count_when_gc_removes_them(
    api: Api, clock: ManualClock, storage: Storage
) -> None:
    p = api.project
    api.post_messages("work", MESSAGE, {**MESSAGE, "ttl": 60}, {**MESSAGE, "ttl": 60})
    api.claim("work", limit=1, ttl=60, grace=60)  # holds the first, alive for 600 s
    clock.advance(200)
    assert value(scrape(api, clock), "zq_messages_expired_total", project=p) is None
    storage.gc()
    samples = scrape(api, clock)
    assert value(samples, "zq_messages_expired_total", project=p) == 2
    assert value(samples, "zq_claims_lapsed_total", project=p) == 1
    assert value(samples, "zq_queue_messages", project=p, queue="work", state="free") == 1


def test_a_queue_deleted_while_empty_is_no_longer_reported(api: Api, clock: ManualClock) -> None:
    p = api.project
    [message_id] = api.post_messages("gone", MESSAGE)
    api.post_messages("kept", MESSAGE)
    assert value(scrape(api, clock), "zq_queue_messages", project=p, queue="gone",
                 state="free") == 1
    api.delete(f"/v2/queues/gone/messages/{message_id}")
    assert api.delete("/v2/queues/gone").status_code == 204  # empty: no purged event
    samples = scrape(api, clock)
    assert value(samples, "zq_queue_messages", project=p, queue="gone", state="free") is None
    assert value(samples, "zq_queue_messages", project=p, queue="kept", state="free") == 1


def test_queue_rates_count_each_kind_per_step(api: Api, clock: ManualClock) -> None:
    """GET /v2/queues/{q}/rates: the console's message rates, from the same tail."""
    api.put("/v2/queues/src", json={"_dead_letter_queue": "dlq"})
    posted = api.post_messages("src", MESSAGE, MESSAGE, MESSAGE)
    claim = api.claim("src", limit=3)
    claim_id = claim.headers["Location"].rsplit("/", 1)[1]
    assert api.delete(claim.json["messages"][0]["href"]).status_code == 204
    for message_id in posted[1:]:
        api.post(f"/v2/queues/src/messages/{message_id}/reject", params={"claim_id": claim_id})
    assert api.post("/v2/queues/dlq/redrive", json={"limit": 1}).json["moved"] == 1
    clock.advance(SETTLE + 0.1)

    src = api.get("/v2/queues/src/rates")
    assert src.status_code == 200, src.text
    body = src.json
    assert (body["step"], body["window"]) == (RATE_STEP, RATE_WINDOW)
    assert len(body["counts"]["posted"]) == RATE_WINDOW // RATE_STEP
    # 3 posted, plus the one the redrive sent back (a redrive is no post).
    assert {k: sum(v) for k, v in body["counts"].items()} == {
        "posted": 3, "delivered": 3, "deleted": 1, "dead_lettered": 2, "redriven": 0}
    dlq = api.get("/v2/queues/dlq/rates").json["counts"]
    assert {k: sum(v) for k, v in dlq.items()} == {
        "posted": 0, "delivered": 0, "deleted": 0, "dead_lettered": 0, "redriven": 1}
    # Other projects see their own queue of that name: nothing.
    other = Api(api.app, "someone-else")
    assert sum(sum(v) for v in other.get("/v2/queues/src/rates").json["counts"].values()) == 0
    # Ten minutes on, the window has moved past them.
    clock.advance(RATE_WINDOW + RATE_STEP)
    later = api.get("/v2/queues/src/rates").json["counts"]
    assert sum(sum(v) for v in later.values()) == 0
    assert_error(api.get("/v2/queues/" + "x" * 300 + "/rates"), 400)


def test_queue_rates_need_metrics(storage: Storage, clock: ManualClock) -> None:
    app = create_app(Config().with_overrides(metrics={"enabled": False}),
                     storage=storage, clock=clock)
    assert Api(app, "p").get("/v2/queues/q/rates").status_code == 404


def breaker_states(samples: dict, project: str, queue: str) -> dict[str, float]:
    return {dict(labels)["state"]: v for (name, labels), v in samples.items()
            if name == "zq_queue_breaker_state" and dict(labels)["queue"] == queue
            and dict(labels)["project"] == project}


def test_breaker_state_gauge_and_trip_counter(api: Api, clock: ManualClock,
                                              storage: Storage) -> None:
    if not storage.has_breaker:
        pytest.skip("this driver runs no breaker yet (Storage.has_breaker)")
    p = api.project
    api.put("/v2/queues/guarded", json={"_breaker_failure_ratio": 0.5,
                                         "_breaker_min_failures": 2})
    api.post_messages("guarded", MESSAGE, MESSAGE, MESSAGE)
    api.post_messages("plain", MESSAGE)
    samples = scrape(api, clock)
    assert breaker_states(samples, p, "guarded") == {"closed": 1, "open": 0, "half-open": 0}
    assert breaker_states(samples, p, "plain") == {}  # its breaker is off: no series
    assert value(samples, "zq_breaker_trips_total", project=p, queue="guarded") is None

    claim = api.claim("guarded", limit=3)
    claim_id = claim.headers["location"].rsplit("/", 1)[1]
    for message in claim.json["messages"][:2]:
        rejected = api.post(f"/v2/queues/guarded/messages/{message['id']}/reject",
                            params={"claim_id": claim_id},
                            json={"description": "db down", "retry_after": 0})
        assert rejected.status_code == 204, rejected.text
    samples = scrape(api, clock)
    assert breaker_states(samples, p, "guarded") == {"closed": 0, "open": 1, "half-open": 0}
    assert value(samples, "zq_breaker_trips_total", project=p, queue="guarded") == 1

    # Forced changes move the gauge, never the trip counter.
    for state in ("closed", "open"):
        assert api.post("/v2/queues/guarded/breaker", json={"state": state}).status_code == 204
    samples = scrape(api, clock)
    assert breaker_states(samples, p, "guarded")["open"] == 1
    assert value(samples, "zq_breaker_trips_total", project=p, queue="guarded") == 1
