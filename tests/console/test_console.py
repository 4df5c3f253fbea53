"""The operator console in Chromium: what an on-call engineer sees and does.

Each test arranges its own queues through the public API (names unique to
the test: the app is shared by the module), drives the page like a person
(labels, buttons, keys) and checks the outcome through the API again.
Screenshots for docs/console.md are taken on the way (docs/console/*.png).
"""

from __future__ import annotations

import contextlib
import os
import re
from typing import Any

import orjson
import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # CI installs it ('.[test]'): there a missing one fails the run
    if os.environ.get("CI"):
        raise
    pytest.skip("playwright is not installed (pip install '.[test]')", allow_module_level=True)

from tests.console.conftest import (
    Served,
    TokenApi,
    Watched,
    open_dead_letters,
    serve,
    shot,
    sign_in,
)
from tests.console.workload import dead_letter_policy, poison, reject_all, stats
from zq import events
from zq.api import create_app
from zq.clock import ManualClock
from zq.config import Config
from zq.storage import open_storage

KEY_ERROR = "KeyError: 'order_id'"
BAD_DATE = "ValueError: bad date '2026-13-01'"


def cell(page: Any, queue: str, column: str) -> str:
    return page.locator(f'tr[data-queue="{queue}"] td[data-col="{column}"]').inner_text()


def queue_order(page: Any) -> list[str]:
    return page.locator("table.queues tbody tr").evaluate_all(
        "rows => rows.map(r => r.dataset.queue)")


def test_overview_lists_counts_after_a_poison_workload_most_troubled_first(
        served: Served, watched: Watched) -> None:
    api = served.admin
    poison(api, "orders", "orders-dlq", {KEY_ERROR: ({"order": "A-1"}, 4),
                                         BAD_DATE: ({"date": "2026-13-01"}, 2)}, good=3)
    api.post_messages("audit", {"body": {"event": "login"}, "ttl": 3600},
                      {"body": {"event": "logout"}, "ttl": 3600})
    page = watched.page
    sign_in(page, served.url, api.token)
    page.wait_for_selector('tr[data-queue="audit"]')

    assert [cell(page, "orders", c) for c in ("free", "claimed", "delayed", "total")] == [
        "3", "0", "0", "3"]
    assert cell(page, "orders-dlq", "total") == "6"
    assert cell(page, "audit", "total") == "2"
    orders = page.locator('tr[data-queue="orders"]')
    assert "→ orders-dlq, after 3 claims" in orders.inner_text()
    assert orders.get_by_role("link", name="6 dead letters in orders-dlq").is_visible()
    # A dead letter queue's row says which queues feed it, and links to them.
    fed = page.locator('tr[data-queue="orders-dlq"] td.policy')
    assert fed.inner_text() == "dead letters of orders"
    assert fed.get_by_role("link", name="orders").get_attribute("href") == "#/queue/orders"
    order = queue_order(page)
    assert order.index("orders") < order.index("audit")
    assert order.index("orders-dlq") < order.index("audit")
    shot(page, "overview")

    # More poison: the growing dead letter queue's source goes first, marked +2.
    reject_all(api, "orders", KEY_ERROR, 2)
    page.keyboard.press("r")
    page.wait_for_selector('tr[data-queue="orders"] .badge.bad')
    assert page.locator('tr[data-queue="orders"] .badge.bad').inner_text() == "+2"
    assert cell(page, "orders-dlq", "total") == "8"
    assert queue_order(page)[0] in ("orders", "orders-dlq")

    # Keyboard: "/" reaches the filter, which narrows the list by name.
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "filter"
    page.keyboard.type("aud")
    assert queue_order(page) == ["audit"]
    page.keyboard.type("zzz")
    assert page.get_by_text("No queue name contains “audzzz”.").is_visible()
    page.keyboard.press("Backspace")
    page.keyboard.press("Backspace")
    page.keyboard.press("Backspace")
    page.keyboard.press("Tab")  # from the filter, the keyboard reaches the queue
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "audit"
    page.keyboard.press("Enter")
    page.locator('dd[data-stat="total"]').wait_for()
    assert page.url.endswith("#/queue/audit")
    assert served.script_errors(watched.console_errors) == []


def test_dead_letter_browser_groups_by_failure_then_body_and_switches(
        served: Served, watched: Watched) -> None:
    api = served.admin
    orders = [{"order": f"B-{n}", "lines": [n]} for n in range(5)]
    date_body = {"date": "2026-13-01"}
    dead_letter_policy(api, "billing", "billing-dlq")
    # Five different orders failing the same way; one of them failing another
    # way too; and two rejections without a description (grouped by reason).
    api.post_messages("billing", *[{"body": b, "ttl": 3600} for b in orders])
    reject_all(api, "billing", KEY_ERROR, 5)
    api.post_messages("billing", {"body": orders[0], "ttl": 3600})
    reject_all(api, "billing", BAD_DATE, 1)
    api.post_messages("billing", *[{"body": date_body, "ttl": 3600}] * 2)
    reject_all(api, "billing", None, 2)
    page = watched.page
    sign_in(page, served.url, api.token)
    open_dead_letters(page, served.url, "billing-dlq")

    assert page.locator("#summary").inner_text() == "8 messages in 3 groups"
    groups = page.locator("section.group")
    assert [groups.nth(i).get_attribute("data-key") for i in range(3)] == [
        KEY_ERROR, "rejected", BAD_DATE]
    assert [groups.nth(i).get_attribute("data-count") for i in range(3)] == ["5", "2", "1"]
    assert groups.nth(0).locator("h2").inner_text() == f"5 messages · {KEY_ERROR} · 5 bodies"
    # The second level: the bodies of that failure, by the server's fingerprint.
    fingerprints = {events.fingerprint(orjson.dumps(b, option=orjson.OPT_SORT_KEYS).decode())
                    for b in orders}
    subgroups = groups.nth(0).locator(".subgroup")
    assert {subgroups.nth(i).get_attribute("data-key") for i in range(5)} == fingerprints

    message = groups.nth(0).locator("li.message").first
    facts = {k: message.locator(f'dd[data-fact="{k}"]').inner_text()
             for k in ("reason", "from", "claim_count", "redrive_count", "last description")}
    assert facts == {"reason": "rejected", "from": "billing", "claim_count": "1",
                     "redrive_count": "0", "last description": KEY_ERROR}
    dead_lettered = message.locator('dd[data-fact="dead lettered"] time')
    assert re.fullmatch(r"\d+ s ago", dead_lettered.inner_text())
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", dead_lettered.get_attribute("title"))
    # Bodies are collapsed until asked for.
    assert message.locator("pre.body").is_hidden()
    message.locator("details.body summary").click()
    assert orjson.loads(message.locator("pre.body").inner_text()) in orders
    message.locator("details.history summary").click()
    assert message.locator("details.history tbody tr").inner_text().split("\t")[:3] == [
        "billing", "rejected", "1"]
    shot(page, "dead-letters")

    # The other way round: identical bodies first, their failures second.
    page.get_by_label("Group", exact=True).select_option("fingerprint")
    expect(page.locator("#summary")).to_have_text("8 messages in 6 groups")
    counts = page.locator("section.group").evaluate_all(
        "gs => gs.map(g => [g.dataset.fingerprint, g.dataset.count])")
    twice = {fp: n for fp, n in counts if n == "2"}
    first_order = events.fingerprint(orjson.dumps(orders[0], option=orjson.OPT_SORT_KEYS).decode())
    assert twice == {first_order: "2", events.fingerprint(
        orjson.dumps(date_body, option=orjson.OPT_SORT_KEYS).decode()): "2"}
    by_body = page.locator(f'section.group[data-fingerprint="{first_order}"]')
    assert by_body.locator("h2").inner_text() == f"2 messages · {first_order[:8]}… · 2 failures"
    assert served.script_errors(watched.console_errors) == []


def test_redrive_previews_with_a_dry_run_then_moves_on_confirm(
        served: Served, watched: Watched) -> None:
    api = served.admin
    rejected = poison(api, "ship", "ship-dlq", {KEY_ERROR: ({"parcel": 1}, 3),
                                                BAD_DATE: ({"parcel": 2}, 1)})
    page = watched.page
    sign_in(page, served.url, api.token)
    open_dead_letters(page, served.url, "ship-dlq")
    if not served.has_route("POST", "/v2/queues/ship-dlq/redrive"):
        # This zq has no redrive: the page says so and offers what it can.
        note = page.locator("#redrive-note")
        note.wait_for()
        assert "Redrive is not available on this server" in note.inner_text()
        assert page.locator("#redrive-filter").is_disabled()
        assert page.locator("section.group").first.get_by_role(
            "button", name="Redrive group…").is_disabled()
        pytest.skip("this zq has no POST /v2/queues/{q}/redrive: checked that the page says so")

    page.locator("section.group").first.get_by_role("button", name="Redrive group…").click()
    dialog = page.get_by_role("dialog")
    assert dialog.locator("#dry-run").inner_text() == (
        "Dry run: 3 messages of this group would move to: ship 3.")
    shot(page, "redrive-preview")
    assert stats(api, "ship-dlq")["total"] == 4  # a dry run moves nothing
    dialog.get_by_role("button", name="Redrive 3").click()
    page.get_by_text("Redrove 3 messages to ship 3.").wait_for()

    assert stats(api, "ship-dlq")["total"] == 1
    assert stats(api, "ship")["total"] == 3
    back = api.get("/v2/queues/ship/messages", params={"include_history": "true", "echo": "true"})
    assert sorted(m["id"] for m in back.json["messages"]) == sorted(rejected[KEY_ERROR])
    assert {m["redrive_count"] for m in back.json["messages"]} == {1}
    page.wait_for_selector('section.group[data-count="1"]')
    assert page.locator("section.group").count() == 1

    # The rest by filter: reason "rejected", back where each came from.
    page.get_by_role("button", name="Redrive by filter…").click()
    page.get_by_role("dialog").get_by_label("Reason", exact=True).select_option("rejected")
    page.get_by_role("dialog").get_by_role("button", name="Preview…").click()
    dialog = page.get_by_role("dialog")
    assert dialog.locator("#dry-run").inner_text() == (
        "Dry run: 1 message of ship-dlq (reason rejected) would move to: ship 1.")
    dialog.get_by_role("button", name="Redrive 1").click()
    page.get_by_text("No dead letters: nothing to do.").wait_for()
    assert stats(api, "ship")["total"] == 4
    assert served.script_errors(watched.console_errors) == []


def test_redrive_by_filter_to_a_new_queue_needs_create(served: Served,
                                                       watched: Watched) -> None:
    api = served.admin
    poison(api, "bill", "bill-dlq", {KEY_ERROR: ({"bill": 1}, 2)})
    page = watched.page
    sign_in(page, served.url, api.token)
    open_dead_letters(page, served.url, "bill-dlq")
    if not served.has_route("POST", "/v2/queues/bill-dlq/redrive"):
        pytest.skip("this zq has no POST /v2/queues/{q}/redrive")

    def preview(create: bool) -> None:
        page.get_by_role("button", name="Redrive by filter…").click()
        dialog = page.get_by_role("dialog")
        dialog.get_by_label("Send to (empty: back where each came from)").fill("bill-manual")
        if create:
            dialog.get_by_label("create the queue if it does not exist").check()
        dialog.get_by_role("button", name="Preview…").click()

    # A misspelt or new destination is not created behind the operator's back.
    preview(create=False)
    page.get_by_text("Queue 'bill-manual' does not exist.", exact=False).wait_for()
    assert stats(api, "bill-dlq")["total"] == 2
    preview(create=True)
    dialog = page.get_by_role("dialog")
    assert dialog.locator("#dry-run").inner_text() == (
        "Dry run: 2 messages of bill-dlq (every message) would move to: bill-manual 2. "
        "Would create: bill-manual.")
    dialog.get_by_role("button", name="Redrive 2").click()
    page.get_by_text("Redrove 2 messages to bill-manual 2.").wait_for()
    assert stats(api, "bill-manual")["total"] == 2
    assert served.script_errors(watched.console_errors) == []


def test_delete_selection_and_purge_ask_first_and_report(served: Served,
                                                         watched: Watched) -> None:
    api = served.admin
    rejected = poison(api, "mail", "mail-dlq", {KEY_ERROR: ({"to": "x"}, 3)})
    page = watched.page
    sign_in(page, served.url, api.token)
    open_dead_letters(page, served.url, "mail-dlq")

    first = rejected[KEY_ERROR][0]
    page.get_by_label(f"select message {first}").check()
    page.get_by_role("button", name="Delete 1 selected…").click()
    page.get_by_role("dialog").wait_for()
    page.keyboard.press("Escape")  # the dialog closes: nothing happens
    assert page.get_by_role("dialog").count() == 0
    assert stats(api, "mail-dlq")["total"] == 3
    page.get_by_role("button", name="Delete 1 selected…").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete 1").click()
    page.get_by_text("Deleted 1 message from mail-dlq.").wait_for()
    remaining = api.get("/v2/queues/mail-dlq/messages", params={"echo": "true"}).json["messages"]
    assert sorted(m["id"] for m in remaining) == sorted(rejected[KEY_ERROR][1:])

    page.get_by_role("button", name="Purge all…").click()
    page.get_by_role("dialog").get_by_role("button", name="Purge").click()
    page.get_by_text("No dead letters: nothing to do.").wait_for()
    assert stats(api, "mail-dlq")["total"] == 0
    shot(page, "dead-letters-empty")
    assert served.script_errors(watched.console_errors) == []


XSS_BODIES = ["<script>alert('body')</script>", {"name": '"><img src=x onerror=alert(2)>'}]
XSS_DESCRIPTION = '<img src=x onerror="alert(3)"><script>alert(4)</script>'


def test_hostile_bodies_and_descriptions_render_as_text(served: Served,
                                                        watched: Watched) -> None:
    api = served.admin
    dead_letter_policy(api, "xss", "xss-dlq")
    api.post_messages("xss", *[{"body": b, "ttl": 3600} for b in XSS_BODIES])
    reject_all(api, "xss", XSS_DESCRIPTION, 2)
    page = watched.page
    sign_in(page, served.url, api.token)
    open_dead_letters(page, served.url, "xss-dlq")
    for details in page.locator("section.group > details:not([open]) > summary").all():
        details.click()
    for details in page.locator("details.body > summary").all():
        details.click()

    bodies = page.locator("pre.body").all_inner_texts()
    assert "<script>alert('body')</script>" in bodies
    assert any('"><img src=x onerror=alert(2)>' in b for b in bodies)
    assert page.locator("q.description").first.inner_text() == XSS_DESCRIPTION
    assert page.locator("main img, main script").count() == 0
    page.wait_for_timeout(300)  # time for an injected handler to have fired
    assert watched.dialogs == []
    assert served.unexpected(watched.console_errors) == []  # none at all
    shot(page, "xss-as-text")


def test_queue_page_edits_the_policy_with_server_validation_inline(
        served: Served, watched: Watched) -> None:
    api = served.admin
    poison(api, "pay", "pay-dlq", {KEY_ERROR: ({"amount": -1}, 1)}, good=2)
    page = watched.page
    sign_in(page, served.url, api.token)
    page.goto(f"{served.url}/console#/queue/pay")
    page.wait_for_selector("figure.chart svg polyline", state="attached")
    assert page.locator('dd[data-stat="free"]').inner_text() == "2"

    page.get_by_label("Retry delay (s)").fill("5000")  # above the max message delay
    page.get_by_role("button", name="Save").click()
    field_error = page.locator('[data-key="_retry_delay"] .field-error')
    field_error.wait_for()
    assert "_retry_delay" in field_error.inner_text()
    assert page.get_by_label("Retry delay (s)").get_attribute("aria-invalid") == "true"
    assert page.locator("#meta-error").inner_text().startswith("Not saved: ")
    assert "_retry_delay" not in api.get("/v2/queues/pay").json  # nothing saved

    page.get_by_label("Retry delay (s)").fill("5")
    page.get_by_label("Retry max delay (s)").fill("60")
    page.get_by_label("Backoff", exact=True).select_option("linear")
    page.get_by_label("Max claim count").fill("4")
    page.get_by_role("button", name="Save").click()
    page.get_by_text("Saved the metadata of pay.").wait_for()
    stored = api.get("/v2/queues/pay").json
    assert (stored["_retry_delay"], stored["_retry_max_delay"], stored["_retry_backoff"],
            stored["_max_claim_count"], stored["_dead_letter_queue"]) == (
        5, 60, "linear", 4, "pay-dlq")
    api.post_messages("pay", {"body": {"amount": 3}, "ttl": 3600})
    # The live stats catch up by themselves (the page polls every 2 s).
    expect(page.locator('dd[data-stat="free"]')).to_have_text("3")
    page.evaluate("window.scrollTo(0, 0)")  # the chart, not the form just saved
    shot(page, "queue-policy")
    assert served.script_errors(watched.console_errors) == []


def test_consumers_with_suspected_ones_marked(served: Served, watched: Watched) -> None:
    api = served.admin
    if not served.has_route("GET", "/v2/queues/probe/consumers"):
        page = watched.page
        sign_in(page, served.url, api.token)
        page.goto(f"{served.url}/console#/queue/probe")
        page.get_by_text("Consumers are not available on this server.").wait_for()
        pytest.skip("this zq has no GET /v2/queues/{q}/consumers: checked that the page says so")
    api.put("/v2/queues/jobs")
    api.patch_metadata("jobs", [{"op": "add", "path": "/metadata/_suspect_lapsed_consumers",
                                 "value": True}])
    api.post_messages("jobs", {"body": {"n": 1}, "ttl": 3600}, {"body": {"n": 2}, "ttl": 3600})
    stalled = TokenApi(served.app, api.project, api.token)  # another Client-ID
    assert stalled.claim("jobs", limit=1, ttl=60, grace=60).status_code == 201
    # The claim lapses (no delete, release or renew); suspected for one claim ttl after.
    served.clock.advance(90)
    page = watched.page
    sign_in(page, served.url, api.token)
    page.goto(f"{served.url}/console#/queue/jobs")
    row = page.locator("tr", has=page.get_by_text(stalled.client_id))
    row.wait_for()
    assert row.locator(".badge.warn").inner_text() == "suspected"
    shot(page, "consumers")
    assert served.script_errors(watched.console_errors) == []


def test_token_auth_wrong_refused_right_works_admin_pages_for_admins_only(
        served: Served, watched: Watched, browser: Any) -> None:
    page = watched.page
    sent: list[dict[str, str]] = []
    page.on("request", lambda r: sent.append(r.headers) if "/v2/" in r.url else None)
    page.goto(f"{served.url}/console")
    page.get_by_label("API token").fill("zqt_not-a-real-token")
    page.get_by_role("button", name="Open console").click()
    page.get_by_text("Refused: The token is unknown or has been revoked.").wait_for()
    shot(page, "sign-in")
    assert page.locator("#nav").is_hidden()

    # An ordinary member of the project: its queues, no admin link, no admin page.
    served.member.post_messages("member-queue", {"body": 1, "ttl": 3600})
    page.get_by_label("API token").fill(served.member.token)
    page.get_by_role("button", name="Open console").click()
    page.wait_for_selector('tr[data-queue="member-queue"]')
    assert page.locator("#nav-admin").is_hidden()
    page.goto(f"{served.url}/console#/admin")
    page.locator("#not-admin").wait_for()
    assert page.get_by_role("heading", name="Health").count() == 0
    assert all(h.get("x-auth-token") == served.member.token for h in sent[1:])
    # The member's roles were asked, not tried: no refused call at sign-in.
    assert not [e for e in watched.console_errors if "status of 403" in e]
    assert not any("cookie" in h for h in sent)
    assert page.context.cookies() == []

    # Another project's token sees its own (empty) project only.
    page.get_by_role("button", name="Sign out").click()
    page.get_by_label("API token").fill(served.other.token)
    page.get_by_role("button", name="Open console").click()
    page.get_by_text("No queues in this project yet").wait_for()

    # The admin: the admin link and page, with health.
    page.get_by_role("button", name="Sign out").click()
    page.get_by_label("API token").fill(served.admin.token)
    page.get_by_role("button", name="Open console").click()
    page.locator("#nav-admin").wait_for()
    page.locator("#nav-admin").click()
    page.get_by_text("storage: reachable").wait_for()
    assert page.get_by_role("heading", name="Pools").is_visible()
    # Pooling is off, which the home document tells: pools and flavors are not asked for.
    page.get_by_text("Pooling is off on this server").first.wait_for()
    assert not [e for e in watched.console_errors if "/v2/pools" in e or "/v2/flavors" in e]
    shot(page, "admin")
    assert served.script_errors(watched.console_errors) == []


def test_auth_none_asks_for_the_project(watched: Watched, tmp_path: Any) -> None:
    clock = ManualClock()
    storage = open_storage(f"sqlite:///{tmp_path / 'none.sqlite3'}", clock=clock)
    app = create_app(Config(), storage=storage, clock=clock)
    url, server, thread = serve(app)
    try:
        from tests.api.helpers import Api
        Api(app, "team-a").post_messages("inbox", {"body": 1, "ttl": 3600})
        page = watched.page
        page.goto(f"{url}/console")
        page.get_by_label("Project", exact=True).fill("team-a")
        page.get_by_role("button", name="Open console").click()
        page.wait_for_selector('tr[data-queue="inbox"]')
        assert page.locator("#who").inner_text() == "project team-a"
        assert page.locator("#nav-admin").is_hidden()
        # The box unticked is the answer: no call that could only be refused.
        assert watched.console_errors == []
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_readable_on_a_narrow_screen(served: Served, watched: Watched) -> None:
    api = served.admin
    poison(api, "narrow", "narrow-dlq", {KEY_ERROR: ({"order": "N-1"}, 2)}, good=1)
    page = watched.page
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, served.url, api.token)
    page.wait_for_selector('tr[data-queue="narrow"]')
    overflow = "document.documentElement.scrollWidth - window.innerWidth"
    assert page.evaluate(overflow) <= 0  # the table scrolls inside its box, not the page
    open_dead_letters(page, served.url, "narrow-dlq")
    assert page.evaluate(overflow) <= 0
    shot(page, "dead-letters-narrow")
    assert page.locator("section.group h2").inner_text() == f"2 messages · {KEY_ERROR} · 1 body"


def test_leaving_the_dead_letter_page_aborts_what_it_still_waits_for(
        served: Served, watched: Watched) -> None:
    """The redrive probe held back until the operator has left: it is aborted,
    and its answer (had it come) touches no page."""
    api = served.admin
    poison(api, "leave", "leave-dlq", {KEY_ERROR: ({"leave": 1}, 1)})
    page = watched.page
    held: list[Any] = []
    failed: list[str] = []
    page.route("**/v2/queues/leave-dlq/redrive", lambda route: held.append(route))
    page.on("requestfailed", lambda r: failed.append(r.url) if "/redrive" in r.url else None)
    sign_in(page, served.url, api.token)
    open_dead_letters(page, served.url, "leave-dlq")
    for _ in range(100):
        if held:
            break
        page.wait_for_timeout(50)
    assert len(held) == 1
    page.keyboard.press("g")
    page.keyboard.press("q")
    page.wait_for_selector('tr[data-queue="leave-dlq"]')
    for route in held:  # the answer arrives late (or, aborted, never)
        with contextlib.suppress(Exception):  # an aborted request cannot be continued
            route.continue_()
    page.wait_for_timeout(300)
    assert served.script_errors(watched.console_errors) == []
    assert [url.rsplit("/", 2)[-2:] for url in failed] == [["leave-dlq", "redrive"]]


def test_a_new_save_outcome_replaces_the_last_and_leaving_clears_it(
        served: Served, watched: Watched) -> None:
    api = served.admin
    dead_letter_policy(api, "tidy", "tidy-dlq")
    page = watched.page
    sign_in(page, served.url, api.token)
    page.goto(f"{served.url}/console#/queue/tidy")
    status = page.locator("#status")
    page.get_by_label("Max claim count").fill("5")
    page.get_by_role("button", name="Save").click()
    expect(status).to_have_text("Saved the metadata of tidy.")

    # Refused right after (within the notice's 8 s): only the refusal shows.
    page.get_by_label("Dead letter queue", exact=True).fill("tidy")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#meta-error")).to_contain_text("Not saved: ")
    expect(status).to_have_text("")
    # The 409's description names queues, not the key: the field is marked anyway.
    dlq_field = page.get_by_label("Dead letter queue", exact=True)
    assert dlq_field.get_attribute("aria-invalid") == "true"
    assert "its own dead letter queue" in page.locator(
        '[data-key="_dead_letter_queue"] .field-error').inner_text()
    assert api.get("/v2/queues/tidy").json["_dead_letter_queue"] == "tidy-dlq"

    # And a success replaces the refusal.
    dlq_field.fill("tidy-dlq")
    page.get_by_role("button", name="Save").click()
    expect(status).to_have_text("Saved the metadata of tidy.")
    expect(page.locator("#meta-error")).to_have_text("")

    # Leaving (here: signing out, then in on the admin page) clears the notice.
    page.get_by_role("button", name="Sign out").click()
    expect(status).to_have_text("")
    page.get_by_label("API token").fill(api.token)
    page.get_by_role("button", name="Open console").click()
    page.locator("#nav-admin").click()
    page.get_by_text("storage: reachable").wait_for()
    expect(status).to_have_text("")
    assert served.script_errors(watched.console_errors) == []
