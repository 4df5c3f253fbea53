"""zq.storage.wake_events: which events wake which queue; queue names in a wake-up."""

from __future__ import annotations

import pytest

from zq import events
from zq.poison import moves
from zq.storage.wake_events import parse_wake_name, wake_name, woken_queue, woken_queues


@pytest.mark.parametrize("kind", [events.POSTED, events.RELEASED, events.REJECTED,
                                  events.BREAKER])
def test_posts_releases_and_retry_rejects_wake_their_queue(kind):
    assert woken_queue(kind, "q", None) == "q"


@pytest.mark.parametrize("kind", [events.CLAIMED, events.RENEWED, events.DELETED,
                                  events.EXPIRED, events.PURGED])
def test_other_kinds_wake_nobody(kind):
    assert woken_queue(kind, "q", {}) is None


@pytest.mark.parametrize("move", [moves.dead_lettered("dlq", None),
                                  moves.rejected("dlq", None, "bad"),
                                  moves.redriven("dlq", 60)])
def test_a_move_wakes_its_destination(move):
    assert woken_queue(move.event, "source", move.detail) == "dlq"


def test_a_change_wakes_each_queue_once_in_order():
    rows = [{"kind": events.POSTED, "project": "p", "queue": "a", "detail": None}] * 10 + [
        {"kind": events.DEAD_LETTERED, "project": "p", "queue": "a",
         "detail": moves.dead_lettered("b", None).detail},
        {"kind": events.CLAIMED, "project": "p", "queue": "c", "detail": {}},
        {"kind": events.POSTED, "project": "p2", "queue": "a", "detail": None},
    ]
    assert woken_queues(rows) == [("p", "a"), ("p", "b"), ("p2", "a")]


@pytest.mark.parametrize(("project", "queue"), [
    ("p", "q"), ("", "q"), ("12:ab", "c"), ("p", "3:x"), ("projé", "q"), ("a" * 256, "b" * 64),
])
def test_wake_names_read_back_exactly(project, queue):
    assert parse_wake_name(wake_name(project, queue)) == (project, queue)


def test_wake_names_of_different_queues_differ():
    assert wake_name("p1", "2q") != wake_name("p", "12q")
    assert wake_name("projé", "q").startswith("6:")  # bytes, as the Lua scripts count


@pytest.mark.parametrize("name", ["", "q", "x:q", "9:short", "-1:q", "1:\udcff", "1:é"])
def test_what_is_not_a_wake_name_is_refused(name):
    assert parse_wake_name(name) is None
