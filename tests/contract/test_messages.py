"""MessageController: post, list, get, get_many, delete, delete_many, pop."""

from __future__ import annotations

import dataclasses
import json

import pytest

from tests.drivers.mongo.session import real_server_url
from zq import events
from zq.config import Limits
from zq.errors import ClaimMismatch, MessageIsClaimed, MessageNotFound
from zq.storage.delivery_rules import DeliveryRules
from zq.validation import MAX_MARKER, is_id_shaped

from .helpers import TTL, claim, events_of, ids, post, raw_message


def test_post_returns_unique_ids_in_order_and_stores_bodies_verbatim(storage, project, clock):
    bodies = ['{"a":1}', '{"b": [1, 2],   "a": "\u00e9"}', '"just a string \u00e9"']
    posted = storage.messages.post(
        project, "q", [raw_message(body) for body in bodies], client_id="c1")
    assert len(set(posted)) == 3
    listed = storage.messages.list(project, "q", echo=True)
    assert ids(listed) == posted
    assert [m.body for m in listed] == bodies
    first = listed[0]
    assert first.queue == "q"
    assert first.ttl == TTL
    assert first.created == pytest.approx(clock.now())
    assert first.expires == pytest.approx(clock.now() + TTL)
    assert first.client_id == "c1"
    assert first.claim_id is None
    assert first.claim_count == 0
    assert first.history == []
    assert listed[0].marker < listed[1].marker < listed[2].marker


def test_a_message_is_stored_under_the_id_drawn_for_it_before_the_post(storage, project):
    """The service draws an id first to bind a sealed body to it (zq.encryption)."""
    drawn = [storage.messages.new_id() for _ in range(2)]
    assert len(set(drawn)) == 2 and all(is_id_shaped(i) for i in drawn)
    given = [dataclasses.replace(raw_message(f'{{"n":{n}}}'), id=i) for n, i in enumerate(drawn)]
    posted = storage.messages.post(project, "q", [*given, raw_message('{"n":2}')],
                                   client_id=None)
    assert posted[:2] == drawn and posted[2] not in drawn
    assert [storage.messages.get(project, "q", i).body for i in drawn] == ['{"n":0}', '{"n":1}']
    assert [e.message_id for e in events_of(storage, project, events.POSTED)] == posted


def test_ids_are_unique_across_queues_and_projects(storage, project):
    other = project + "-other"
    posted = post(storage, project, "a", 3) + post(storage, project, "b", 3)
    posted += post(storage, other, "a", 3)
    assert len(set(posted)) == 9


def test_list_pages_by_marker(storage, project):
    posted = post(storage, project, "q", 5)
    page = storage.messages.list(project, "q", limit=2, echo=True)
    assert ids(page) == posted[:2]
    page = storage.messages.list(project, "q", marker=page[-1].marker, limit=2, echo=True)
    assert ids(page) == posted[2:4]
    page = storage.messages.list(project, "q", marker=page[-1].marker, limit=2, echo=True)
    assert ids(page) == posted[4:]


def test_list_without_echo_leaves_out_own_messages(storage, project):
    mine = post(storage, project, "q", 2, client_id="me")
    theirs = post(storage, project, "q", 2, client_id="them")
    anonymous = post(storage, project, "q", 1, client_id=None)
    assert ids(storage.messages.list(project, "q", client_id="me")) == theirs + anonymous
    assert ids(storage.messages.list(project, "q", client_id="me", echo=True)) == (
        mine + theirs + anonymous)


def test_list_claimed_and_delayed_only_when_asked(storage, project):
    claimed = post(storage, project, "q", 2)
    claim(storage, project, "q", 2)
    free = post(storage, project, "q", 1)
    delayed = post(storage, project, "q", 1, delay=30)
    listed = storage.messages.list(project, "q", echo=True)
    assert ids(listed) == free
    with_claimed = storage.messages.list(project, "q", echo=True, include_claimed=True)
    assert ids(with_claimed) == claimed + free
    assert all(m.claim_id is not None for m in with_claimed[:2])
    with_delayed = storage.messages.list(project, "q", echo=True, include_delayed=True)
    assert ids(with_delayed) == free + delayed
    everything = storage.messages.list(
        project, "q", echo=True, include_claimed=True, include_delayed=True)
    assert ids(everything) == claimed + free + delayed


def test_delayed_message_becomes_visible_when_the_delay_passes(storage, project, clock):
    delayed = post(storage, project, "q", 1, delay=30)
    assert claim(storage, project, "q") is None
    clock.advance(30)
    assert ids(storage.messages.list(project, "q", echo=True)) == delayed
    assert ids(claim(storage, project, "q").messages) == delayed


def test_get_and_get_many(storage, project):
    posted = post(storage, project, "q", 3)
    got = storage.messages.get(project, "q", posted[1])
    assert got.id == posted[1] and json.loads(got.body) == {"n": 1}
    many = storage.messages.get_many(project, "q", [posted[2], "unknown", posted[0]])
    assert ids(many) == [posted[0], posted[2]]
    assert storage.messages.get_many(project, "q", []) == []


def test_get_missing_or_from_another_queue_raises(storage, project):
    posted = post(storage, project, "q", 1)
    with pytest.raises(MessageNotFound):
        storage.messages.get(project, "q", "unknown")
    with pytest.raises(MessageNotFound):
        storage.messages.get(project, "other", posted[0])
    assert storage.messages.get_many(project, "other", posted) == []


def test_get_shows_the_live_claim(storage, project):
    posted = post(storage, project, "q", 1)
    claimed = claim(storage, project, "q")
    got = storage.messages.get(project, "q", posted[0])
    assert got.claim_id == claimed.id
    assert got.claim_count == 1


def test_every_read_shows_the_live_claim_id_and_only_while_it_lives(storage, project, clock):
    # The API builds a claimed message's href (?claim_id=C) from this, and
    # python-zaqarclient deletes a fetched message with the id in the href.
    posted = post(storage, project, "q", 3)
    first = claim(storage, project, "q", 1, ttl=60)
    second = claim(storage, project, "q", 1, ttl=120)

    def shown() -> list[list[str | None]]:
        listed = storage.messages.list(project, "q", echo=True, include_claimed=True)
        many = storage.messages.get_many(project, "q", posted)
        one = [storage.messages.get(project, "q", i).claim_id for i in posted]
        return [[m.claim_id for m in listed], [m.claim_id for m in many], one]

    assert shown() == [[first.id, second.id, None]] * 3
    storage.claims.release(project, "q", second.id, client_id=None)
    assert shown() == [[first.id, None, None]] * 3
    clock.advance(60)  # the first claim expires: its message is free again
    assert shown() == [[None, None, None]] * 3


def test_delete_free_message(storage, project):
    posted = post(storage, project, "q", 2)
    storage.messages.delete(project, "q", posted[0], claim_id=None, client_id="c")
    with pytest.raises(MessageNotFound):
        storage.messages.get(project, "q", posted[0])
    assert ids(storage.messages.list(project, "q", echo=True)) == posted[1:]
    [event] = events_of(storage, project, events.DELETED)
    assert (event.message_id, event.claim_id, event.client_id, event.claim_count) == (
        posted[0], None, "c", 0)


def test_delete_missing_or_expired_message_is_quiet(storage, project, clock):
    posted = post(storage, project, "q", 1, ttl=60)
    storage.messages.delete(project, "q", "unknown", claim_id=None, client_id=None)
    storage.messages.delete(project, "q", "unknown", claim_id="some-claim", client_id=None)
    clock.advance(60)
    storage.messages.delete(project, "q", posted[0], claim_id=None, client_id=None)
    assert events_of(storage, project, events.DELETED) == []


def test_delete_claimed_message_without_claim_id_is_refused(storage, project):
    posted = post(storage, project, "q", 1)
    claim(storage, project, "q")
    with pytest.raises(MessageIsClaimed) as refused:
        storage.messages.delete(project, "q", posted[0], claim_id=None, client_id=None)
    assert ids(storage.messages.get_many(project, "q", posted)) == posted
    # One text on every driver: the client is told how to delete it.
    assert "give its claim id" in refused.value.description


def test_delete_with_a_claim_that_does_not_hold_the_message_is_a_mismatch(
        storage, project, clock):
    posted = post(storage, project, "q", 2)
    first = claim(storage, project, "q", 1)
    second = claim(storage, project, "q", 1)
    # Another live claim holds it.
    with pytest.raises(ClaimMismatch) as mismatch:
        storage.messages.delete(project, "q", posted[1], claim_id=first.id, client_id=None)
    assert first.id in mismatch.value.description and posted[1] in mismatch.value.description
    storage.claims.release(project, "q", second.id, client_id=None)
    # Free message.
    with pytest.raises(ClaimMismatch):
        storage.messages.delete(project, "q", posted[1], claim_id=first.id, client_id=None)
    # Its own claim has expired.
    clock.advance(first.ttl)
    with pytest.raises(ClaimMismatch):
        storage.messages.delete(project, "q", posted[0], claim_id=first.id, client_id=None)
    assert ids(storage.messages.get_many(project, "q", posted)) == posted


def test_delete_with_its_claim(storage, project):
    posted = post(storage, project, "q", 2)
    claimed = claim(storage, project, "q", 2, client_id="worker")
    storage.messages.delete(project, "q", posted[0], claim_id=claimed.id, client_id="worker")
    assert ids(storage.messages.get_many(project, "q", posted)) == posted[1:]
    assert ids(storage.claims.get(project, "q", claimed.id).messages) == posted[1:]
    [event] = events_of(storage, project, events.DELETED)
    assert (event.message_id, event.claim_id, event.client_id, event.claim_count) == (
        posted[0], claimed.id, "worker", 1)


def test_delete_many_without_claim_ids_deletes_claimed_too(storage, project):
    posted = post(storage, project, "q", 4)
    claim(storage, project, "q", 2)
    deleted = storage.messages.delete_many(
        project, "q", [posted[0], posted[2], "unknown"], client_id="c")
    assert sorted(deleted) == sorted([posted[0], posted[2]])
    assert ids(storage.messages.list(project, "q", echo=True, include_claimed=True)) == [
        posted[1], posted[3]]
    assert sorted(e.message_id for e in events_of(storage, project, events.DELETED)) == sorted(
        deleted)


def test_delete_many_with_claim_ids_deletes_only_what_they_hold(storage, project):
    posted = post(storage, project, "q", 6)
    first = claim(storage, project, "q", 2)
    second = claim(storage, project, "q", 2)
    third = claim(storage, project, "q", 1)
    deleted = storage.messages.delete_many(
        project, "q", posted, claim_ids=[first.id, second.id], client_id="c")
    assert sorted(deleted) == sorted(posted[:4])
    left = storage.messages.list(project, "q", echo=True, include_claimed=True)
    assert ids(left) == posted[4:]
    assert left[0].claim_id == third.id
    logged = events_of(storage, project, events.DELETED)
    assert {e.message_id: e.claim_id for e in logged} == {
        posted[0]: first.id, posted[1]: first.id, posted[2]: second.id, posted[3]: second.id}


def test_delete_many_with_an_expired_claim_deletes_nothing(storage, project, clock):
    posted = post(storage, project, "q", 2)
    claimed = claim(storage, project, "q", 2)
    clock.advance(claimed.ttl)
    assert storage.messages.delete_many(
        project, "q", posted, claim_ids=[claimed.id], client_id=None) == []
    assert ids(storage.messages.get_many(project, "q", posted)) == posted


def test_pop_takes_free_messages_in_order_and_counts_a_claim(storage, project):
    posted = post(storage, project, "q", 5)
    claim(storage, project, "q", 1)
    popped = storage.messages.pop(project, "q", limit=2, client_id="popper")
    assert ids(popped) == posted[1:3]
    assert [m.claim_count for m in popped] == [1, 1]
    assert json.loads(popped[0].body) == {"n": 1}
    assert ids(storage.messages.list(project, "q", echo=True, include_claimed=True)) == [
        posted[0], posted[3], posted[4]]
    logged = events_of(storage, project, events.DELETED)
    assert [(e.message_id, e.client_id, e.claim_count, e.detail) for e in logged] == [
        (posted[1], "popper", 1, {"pop": True}), (posted[2], "popper", 1, {"pop": True})]


def test_pop_from_empty_or_missing_queue(storage, project):
    assert storage.messages.pop(project, "missing", limit=3, client_id=None,
                                rules=DeliveryRules(dead_letter=None)) == []


def test_list_after_the_largest_marker_is_empty(storage, project):
    # zq.validation.message_marker gives this for a marker no page gave.
    post(storage, project, "q", 2)
    assert storage.messages.list(project, "q", marker=MAX_MARKER, echo=True) == []


# The most messages one post can hold within the default limits: bodies of
# one digit, {"body":0}, fill max_messages_post_size.
LARGEST_POST = (Limits().max_messages_post_size - len('{"messages":[]}')) // len('{"body":0},')


def test_a_post_of_the_most_messages_the_limits_allow_is_stored_whole(
    storage, project, backend_name
):
    count = LARGEST_POST
    if backend_name == "mongo" and real_server_url() is None:
        # mongomock checks its TTL index over the whole collection on every
        # inserted document (quadratic: minutes for this post); a MongoDB
        # server and pymongo's insert_many have no such cost nor a limit
        # on parameters.
        count = 300
    posted = post(storage, project, "q", count)
    assert len(set(posted)) == count
    assert storage.queues.stats(project, "q").total == count
    assert ids(storage.messages.list(project, "q", limit=count, echo=True)) == posted
