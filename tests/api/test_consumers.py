"""GET /v2/queues/{q}/consumers and _suspect_lapsed_consumers (zq.poison.consumers)."""

from __future__ import annotations

import pytest

from tests.api.helpers import assert_error

SUSPECT = {"_suspect_lapsed_consumers": True}


def claim_id(result) -> str:
    assert result.status_code == 201, result.text
    return result.headers["Location"].rsplit("/", 1)[1]


def consumers(api, queue="q"):
    result = api.get(f"/v2/queues/{queue}/consumers")
    assert result.status_code == 200, result.text
    return {c["client_id"]: c for c in result.json["consumers"]}


def post(api, count=2, queue="q"):
    return api.post_messages(queue, *({"body": n, "ttl": 3600} for n in range(count)))


def test_consumers_shows_live_and_lapsed_claims_per_client(api, clock):
    post(api, 3)
    other = api.other_client()
    start = clock.now()
    claim_id(api.claim("q", limit=1, ttl=60))
    clock.advance(10)
    claim_id(other.claim("q", limit=1, ttl=120))
    shown = consumers(api)
    assert shown[api.client_id] == {"client_id": api.client_id, "last_claim": start,
                                    "live_claims": 1, "lapsed_claims": 0,
                                    "suspected": False, "waiting": 0}
    assert shown[other.client_id]["live_claims"] == 1
    # The first claim expires untouched: lapsed; the second is still live.
    clock.advance(55)
    shown = consumers(api)
    assert (shown[api.client_id]["live_claims"], shown[api.client_id]["lapsed_claims"]) == (0, 1)
    assert (shown[other.client_id]["live_claims"],
            shown[other.client_id]["lapsed_claims"]) == (1, 0)
    # Suspicion needs the queue's setting.
    assert shown[api.client_id]["suspected"] is False


def test_deleted_or_released_claims_never_lapse(api, clock):
    ids = post(api, 2)
    first = claim_id(api.claim("q", limit=1))
    assert api.delete(f"/v2/queues/q/messages/{ids[0]}",
                      params={"claim_id": first}).status_code == 204
    second = claim_id(api.claim("q", limit=1))
    assert api.delete(f"/v2/queues/q/claims/{second}").status_code == 204
    assert consumers(api)[api.client_id]["live_claims"] == 1  # the first, until it expires
    clock.advance(61)
    assert consumers(api)[api.client_id]["lapsed_claims"] == 0


def test_a_renewed_claim_lapses_at_its_new_expiry(api, clock):
    post(api, 1)
    held = claim_id(api.claim("q", limit=1, ttl=60))
    clock.advance(50)
    assert api.patch(f"/v2/queues/q/claims/{held}", json={"ttl": 60}).status_code == 204
    clock.advance(20)
    assert consumers(api)[api.client_id]["live_claims"] == 1
    clock.advance(41)
    assert consumers(api)[api.client_id]["lapsed_claims"] == 1


def test_only_clients_that_claimed_in_the_last_hour_are_listed(api, clock):
    post(api, 1)
    claim_id(api.claim("q", limit=1))
    clock.advance(3601)
    assert consumers(api) == {}
    assert consumers(api, "never-claimed") == {}


def test_a_client_that_let_a_claim_lapse_is_suspected_until_it_shows_it_is_alive(api, clock):
    api.put("/v2/queues/q", json=SUSPECT)
    ids = post(api, 3)
    lapsed = claim_id(api.claim("q", limit=1, ttl=60))
    clock.advance(61)
    refused = api.claim("q", limit=1)
    assert refused.status_code == 204
    assert refused.headers["X-Zq-Suspected"] == lapsed
    assert consumers(api)[api.client_id]["suspected"] is True
    # A healthy consumer gets the redelivered message meanwhile.
    healthy = api.other_client()
    taken = healthy.claim("q", limit=3)
    assert ids[0] in {m["id"] for m in taken.json["messages"]}
    # A late delete naming the lapsed claim is refused, but shows it is alive.
    late = api.delete(f"/v2/queues/q/messages/{ids[0]}", params={"claim_id": lapsed})
    assert late.status_code in (400, 403)
    assert consumers(api)[api.client_id]["suspected"] is False
    api.post_messages("q", {"body": "more", "ttl": 3600})
    again = api.claim("q", limit=1)
    assert again.status_code == 201 and "X-Zq-Suspected" not in again.headers


@pytest.mark.parametrize("alive", ["renew", "release", "reject"])
def test_renew_release_or_reject_of_the_lapsed_claim_lifts_suspicion(api, clock, alive):
    api.put("/v2/queues/q", json=SUSPECT)
    ids = post(api, 2)
    lapsed = claim_id(api.claim("q", limit=1, ttl=60))
    clock.advance(61)
    assert api.claim("q").status_code == 204
    if alive == "renew":
        assert api.patch(f"/v2/queues/q/claims/{lapsed}", json={"ttl": 60}).status_code == 404
    elif alive == "release":
        assert api.delete(f"/v2/queues/q/claims/{lapsed}").status_code == 204
    else:
        api.post(f"/v2/queues/q/messages/{ids[0]}/reject", params={"claim_id": lapsed},
                 json={"retry_after": 0})
    assert claim_id(api.claim("q", limit=1))


def test_suspicion_ends_one_claim_ttl_after_the_lapse(api, clock):
    api.put("/v2/queues/q", json=SUSPECT)
    post(api, 2)
    claim_id(api.claim("q", limit=1, ttl=100))
    clock.advance(101)
    assert api.claim("q").status_code == 204
    clock.advance(98)
    assert api.claim("q").status_code == 204
    clock.advance(2)
    assert claim_id(api.claim("q", limit=1))
    # Still counted as lapsed, no longer suspected.
    shown = consumers(api)[api.client_id]
    assert (shown["lapsed_claims"], shown["suspected"]) == (1, False)


def test_other_clients_are_not_suspected(api, clock):
    api.put("/v2/queues/q", json=SUSPECT)
    post(api, 2)
    claim_id(api.claim("q", limit=1))
    clock.advance(61)
    assert claim_id(api.other_client().claim("q", limit=1))


@pytest.mark.parametrize("value", [1, "true", [True]])
def test_the_setting_must_be_a_boolean(api, value):
    assert_error(api.put("/v2/queues/q", json={"_suspect_lapsed_consumers": value}), 400,
                 "_suspect_lapsed_consumers")


def test_consumers_of_a_badly_named_queue_is_a_400(api):
    assert_error(api.get("/v2/queues/bad%20name/consumers"), 400)


def test_a_deleted_queue_forgets_its_consumers(api):
    post(api, 1)
    claim_id(api.claim("q", limit=1))
    assert api.delete("/v2/queues/q").status_code == 204
    assert consumers(api) == {}
