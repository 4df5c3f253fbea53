"""The console as an operator under pressure uses it: paced and cancelled
redrive, filters the API offers, where dead letters come from, rates,
a test message, and a dead letter queue of 10,000 messages in 500 groups.

Same app and browser fixtures as test_console.py (tests/console/conftest.py).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # CI installs it ('.[test]'): there a missing one fails the run
    if os.environ.get("CI"):
        raise
    pytest.skip("playwright is not installed (pip install '.[test]')", allow_module_level=True)

from tests.console.conftest import Served, Watched, shot, sign_in
from tests.console.workload import poison, stats
from zq import events

KEY_ERROR = "KeyError: 'order_id'"


def ids_in(served: Served, queue: str) -> set[str]:
    found: set[str] = set()
    params: dict[str, Any] = {"echo": "true", "include_claimed": "true", "limit": 20}
    while True:
        answer = served.admin.get(f"/v2/queues/{queue}/messages", params=params)
        if answer.status_code == 204 or not answer.json["messages"]:
            return found
        found.update(m["id"] for m in answer.json["messages"])
        params["marker"] = answer.json["links"][0]["href"].split("marker=")[1].split("&")[0]


def needs_redrive(served: Served) -> None:
    if not served.has_route("POST", "/v2/queues/probe/redrive"):
        pytest.skip("this zq has no POST /v2/queues/{q}/redrive")


def test_redrive_at_a_chosen_speed_and_cancel_between_pages(served: Served,
                                                             watched: Watched) -> None:
    needs_redrive(served)
    api = served.admin
    rejected = set(poison(api, "pace", "pace-dlq", {KEY_ERROR: ({"pace": 1}, 8)})[KEY_ERROR])
    page = watched.page
    sign_in(page, served.url, api.token)
    page.goto(f"{served.url}/console#/dlq/pace-dlq")
    # Where these dead letters come from, linked.
    expect(page.locator("#feeders")).to_have_text("Dead letter queue of pace.")
    assert page.locator("#feeders a").get_attribute("href") == "#/queue/pace"
    page.get_by_role("button", name="Redrive group…").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Speed (messages per second)").fill("2")
    shot(page, "redrive-speed")
    dialog.get_by_role("button", name="Redrive 8").click()

    # At 2/s each call moves 2: after the first page, cancel.
    progress = page.locator("#redrive-progress")
    expect(progress).to_have_text("Redriving: 2 of 8")
    assert "at most 2/s" in page.locator("#redrive-pace").inner_text()
    shot(page, "redrive-progress")
    page.get_by_role("button", name="Cancel redrive").click()
    notice = page.locator("#status")
    expect(notice).to_contain_text("Redrive cancelled: ")
    moved = ids_in(served, "pace")
    left = ids_in(served, "pace-dlq")
    # Stopped between pages: every message in exactly one queue, none lost.
    assert moved | left == rejected and not moved & left
    assert 2 <= len(moved) <= 4
    assert notice.inner_text() == (
        f"Redrive cancelled: {len(moved)} messages moved to pace {len(moved)}; "
        f"the other {8 - len(moved)} stay in pace-dlq.")
    expect(page.locator("section.group")).to_have_attribute("data-count", str(8 - len(moved)))
    assert served.script_errors(watched.console_errors) == []


def test_redrive_by_fingerprint_and_dead_lettered_time(served: Served,
                                                       watched: Watched) -> None:
    needs_redrive(served)
    api = served.admin
    poison(api, "stamp", "stamp-dlq", {KEY_ERROR: ({"stamp": 1}, 3),
                                       "TypeError": ({"stamp": 2}, 2)})
    history = api.get("/v2/queues/stamp-dlq/messages",
                      params={"echo": "true", "include_history": "true"}).json["messages"]
    last = max(datetime.fromisoformat(m["history"][0]["last_time"].replace("Z", "+00:00"))
               for m in history)
    page = watched.page
    sign_in(page, served.url, api.token)
    page.goto(f"{served.url}/console#/dlq/stamp-dlq")
    page.wait_for_selector("section.group")

    # After the last of them: nothing matches.
    page.get_by_role("button", name="Redrive by filter…").click()
    dialog = page.get_by_role("dialog")
    # The field takes whole seconds: the second after the last one.
    later = (last.astimezone(UTC).replace(tzinfo=None) + timedelta(seconds=1)).isoformat(
        timespec="seconds")
    dialog.get_by_label("Dead lettered after (UTC)").fill(later)
    dialog.get_by_role("button", name="Preview…").click()
    nothing = page.get_by_role("dialog", name="Nothing to redrive")
    nothing.get_by_role("button", name="Close").click()

    # One body, by the fingerprint the server records.
    two = events.fingerprint(orjson.dumps({"stamp": 2}, option=orjson.OPT_SORT_KEYS).decode())
    page.get_by_role("button", name="Redrive by filter…").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Body fingerprint").select_option(two)
    shot(page, "redrive-filter")
    dialog.get_by_role("button", name="Preview…").click()
    assert page.get_by_role("dialog").locator("#dry-run").inner_text() == (
        f"Dry run: 2 messages of stamp-dlq (fingerprint {two}) would move to: stamp 2.")
    page.get_by_role("dialog").get_by_role("button", name="Redrive 2").click()
    page.get_by_text("Redrove 2 messages to stamp 2.").wait_for()
    assert stats(api, "stamp-dlq")["total"] == 3
    assert served.script_errors(watched.console_errors) == []
