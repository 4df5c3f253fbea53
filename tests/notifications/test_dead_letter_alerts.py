"""Dead letter alerts: a DLQ's subscribers hear of each move in; redrives are posts."""

from __future__ import annotations

from tests.notifications.helpers import attach, config, drain, notifier, receiver
from tests.notifications.test_delivery import post, sub_id
from zq.clock import ManualClock
from zq.poison import moves
from zq.storage.base import Storage


def test_a_move_into_a_dead_letter_queue_alerts_its_subscribers(
        storage: Storage, clock: ManualClock, project: str) -> None:
    subs = attach(storage)
    with receiver() as hook:
        subs.add(sub_id(), project, "dlq", hook.url("/dlq"))
        subs.add(sub_id(), project, "work", hook.url("/work"))
        [poison] = post(storage, project, "work", {"order": 7})
        storage.messages.move(project, "work", [poison],
                              moves.rejected("dlq", None, "bad order"), client_id=None)
        drain(notifier(storage, clock, config(hook.port)))
        [alert] = [r.json() for r in hook.on("/dlq")]
        assert alert["body"] == {"order": 7} and alert["queue_name"] == "dlq"
        assert alert["Message_Type"] == "Notification"  # as Zaqar marks every notification
        assert alert["message_id"] == poison and alert["from"] == "work"
        assert alert["reason"] == "rejected" and alert["description"] == "bad order"
        assert alert["claim_count"] == 0 and alert["fingerprint"]
        assert [(h["queue"], h["reason"]) for h in alert["history"]] == [("work", "rejected")]
        # The source queue's subscriber heard of the post only; the message had
        # left "work" before the notifier read it: its body is gone (documented).
        assert [r.json() for r in hook.on("/work")] == [
            {"body": None, "ttl": 300, "queue_name": "work", "Message_Type": "Notification"}]


def test_a_redrive_notifies_the_destination_like_a_post(
        storage: Storage, clock: ManualClock, project: str) -> None:
    subs = attach(storage)
    with receiver() as hook:
        [poison] = post(storage, project, "src", {"x": 1})
        storage.messages.move(project, "src", [poison], moves.dead_lettered("dead", None),
                              client_id=None)
        clock.advance(3)  # the subscription is younger than the post (by over 2 s)
        subs.add(sub_id(), project, "src", hook.url("/src"))
        storage.messages.move(project, "dead", [poison], moves.redriven("src", 300),
                              client_id=None)
        drain(notifier(storage, clock, config(hook.port)))
        assert [r.json() for r in hook.on("/src")] == [
            {"body": {"x": 1}, "ttl": 300, "queue_name": "src", "Message_Type": "Notification"}]


def test_aggregate_seconds_sends_one_alert_per_source_reason_fingerprint_and_window(
        storage: Storage, clock: ManualClock, project: str) -> None:
    subs = attach(storage)
    with receiver() as hook:
        clock.advance(60 - clock.now() % 60)  # the start of a 60 s window
        subs.add(sub_id(), project, "agg-dlq", hook.url(), aggregate_seconds=60)
        same = post(storage, project, "agg", *([{"poison": True}] * 8))
        other = post(storage, project, "agg", {"other": True})
        for message_id in same + other:
            storage.messages.move(project, "agg", [message_id],
                                  moves.dead_lettered("agg-dlq", None), client_id=None)
        server = notifier(storage, clock, config(hook.port))
        drain(server)
        assert hook.received == []  # the window is still open
        clock.advance(61)
        drain(server)
        alerts = sorted((r.json() for r in hook.received), key=lambda a: -a["count"])
        assert [a["count"] for a in alerts] == [8, 1]
        assert alerts[0]["message_ids"] == same[:5] and alerts[1]["message_ids"] == other
        assert {a["reason"] for a in alerts} == {"max_claim_count"}
        assert {a["Message_Type"] for a in alerts} == {"Notification"}
        assert alerts[0]["from"] == "agg" and alerts[0]["sample"] == {"poison": True}
        assert alerts[0]["window_end"] - alerts[0]["window_start"] == 60
        drain(server)
        assert len(hook.received) == 2
