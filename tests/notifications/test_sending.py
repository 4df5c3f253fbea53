"""One attempt: allowed hosts, the signature, redirects, Zaqar's retry schedule, mail."""

from __future__ import annotations

import hashlib
import hmac
import socket
import tracemalloc
from collections.abc import Iterator

import pytest

from tests.notifications.helpers import receiver
from zq import retry_policy as retry
from zq.errors import InvalidRequest
from zq.notifications import mail, webhook
from zq.notifications.hosts import AllowedHosts, Refused, parse_entries


def resolver(table: dict[str, list[str]]):  # type: ignore[no-untyped-def]
    return lambda host, port: table[host]


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:9000/x",  # loopback without an IP entry
    "http://hooks.example.com/x",  # a name that is not listed
    "http://rebind.example.com/x",  # listed, but resolves to a private address
    "http://hooks.example.org:8443/x",  # listed on another port
    "ftp://hooks.example.org/x",
])
def test_refused_urls(url: str) -> None:
    allowed = AllowedHosts.from_setting(
        "rebind.example.com, hooks.example.org:443, 10.1.0.0/16:80",
        resolver({"rebind.example.com": ["192.168.1.5"], "hooks.example.org": ["93.184.216.34"]}))
    with pytest.raises(Refused):
        allowed.check(url)


def test_allowed_urls_are_pinned_to_the_checked_address() -> None:
    allowed = AllowedHosts.from_setting(
        "hooks.example.org:443, 127.0.0.1:8080, 10.1.0.0/16, [::1]:81",
        resolver({"hooks.example.org": ["93.184.216.34"]}))
    target = allowed.check("https://hooks.example.org/in?x=1")
    assert (target.address, target.port, target.path) == ("93.184.216.34", 443, "/in?x=1")
    assert allowed.check("http://127.0.0.1:8080/").address == "127.0.0.1"
    assert allowed.check("http://10.1.2.3:9/").address == "10.1.2.3"
    assert allowed.check("http://[::1]:81/").address == "::1"


def test_a_refusal_says_its_real_reason_and_whether_dns_could_change_it() -> None:
    allowed = AllowedHosts.from_setting(
        "127.0.0.1:19110, hooks.example.org:443, 10.0.0.0/8:80",
        resolver({"hooks.example.org": ["10.1.1.1"]}))
    with pytest.raises(Refused) as caught:
        allowed.check("http://127.0.0.1:19111/hook")
    assert str(caught.value) == ("port 19111 is not allowed for 127.0.0.1 (allowed_hosts "
                                 "lists it with other ports only)")
    assert caught.value.lasting
    assert allowed.never("http://127.0.0.1:19111/hook") == str(caught.value)
    # Listed, but resolving to an address listed for another port: DNS may change.
    with pytest.raises(Refused, match=r"10\.1\.1\.1, not allowed \(listed in allowed_hosts "
                                      r"for other ports only\)") as caught:
        allowed.check("https://hooks.example.org/")
    assert not caught.value.lasting
    assert allowed.never("https://hooks.example.org/") is None
    assert allowed.never("http://127.0.0.1:19110/") is None
    assert allowed.never("http://8.8.8.8/") == "8.8.8.8 is not in allowed_hosts"


def test_empty_allows_nothing_and_bad_entries_are_errors() -> None:
    with pytest.raises(Refused, match="empty"):
        AllowedHosts.from_setting("").check("http://127.0.0.1/")
    with pytest.raises(ValueError, match="bad:port"):
        parse_entries("ok.example, bad:port")


def test_zaqars_default_retry_schedule() -> None:
    # 3 at once, 3 at the minimum delay, linear 5..25 by 5, 3 at the maximum.
    assert list(retry.Schedule.of({})) == [0, 0, 0, 5, 5, 5, 5, 10, 15, 20, 25, 30, 30, 30]


def test_backoff_functions_and_override_rule() -> None:
    policy = {"retries_with_no_delay": 0, "minimum_delay_retries": 0,
              "maximum_delay_retries": 0, "minimum_delay": 5, "maximum_delay": 30}
    # Zaqar's formulas: 5 steps (25 s / 5) from 5 to 30, truncated to whole seconds.
    assert list(retry.Schedule.of({**policy, "retry_backoff_function": "geometric"})) == [
        5, 7, 12, 19, 30]
    assert list(retry.Schedule.of({**policy, "retry_backoff_function": "exponential"})) == [
        5, 7, 12, 19, 30]
    assert list(retry.Schedule.of({**policy, "retry_backoff_function": "arithmetic"})) == [
        5, 7, 12, 20, 30]
    own, queue = {"minimum_delay": 1}, {"minimum_delay": 2}
    assert retry.effective_policy({"_retry_policy": own}, {"_retry_policy": queue}) == own
    assert retry.effective_policy({}, {"_retry_policy": queue}) == queue
    strict = {**queue, "ignore_subscription_override": True}
    assert retry.effective_policy({"_retry_policy": own}, {"_retry_policy": strict}) == strict


def test_the_schedule_is_computed_lazily_and_bounded() -> None:
    # A policy stored before policies were checked: as a list of delays it
    # was tens of millions of floats (hundreds of MiB); as a schedule it is a
    # few numbers, clamped into zq's bounds.
    stored = {"retries_with_no_delay": 10**7, "minimum_delay": 5, "maximum_delay": 2 * 10**7}
    tracemalloc.start()
    try:
        schedule = retry.Schedule.of(stored)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024
    assert len(schedule) == 100 + 3 + (3600 - 5 + 4) // 5 + 3
    assert schedule.delay(0) == 0 and schedule.delay(99) == 0 and schedule.delay(100) == 5
    assert schedule.delay(len(schedule) - 1) == 3600 and schedule.delay(len(schedule)) is None
    # Wrong types in a stored policy: Zaqar's defaults.
    assert list(retry.Schedule.of({"minimum_delay": "x", "retries_with_no_delay": True})) == (
        list(retry.Schedule.of({})))


@pytest.mark.parametrize(("policy", "says"), [
    ({"maximum_delay": 2e7}, "maximum_delay must be an integer between 0 and 3600"),
    ({"maximum_delay": 3601}, "between 0 and 3600, got 3601"),
    ({"retries_with_no_delay": 10**9}, "retries_with_no_delay must be between 0 and 100"),
    ({"minimum_delay_retries": -1}, "minimum_delay_retries must be between 0 and 100"),
    ({"maximum_delay_retries": True}, "maximum_delay_retries must be an integer"),
    ({"minimum_delay": 40}, "minimum_delay (40) is above maximum_delay (30)"),
    ({"retry_backoff_function": "cubic"}, "retry_backoff_function must be one of"),
    ({"ignore_subscription_override": 1}, "ignore_subscription_override must be true or false"),
    ({"retries": 3}, "unknown keys ['retries']"),
    ([], "must be an object"),
])
def test_retry_policies_out_of_bounds_are_refused(policy: object, says: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        retry.check(policy)
    assert says in str(caught.value)


def test_a_secret_signs_the_body() -> None:
    with receiver() as hook:
        allowed = AllowedHosts.from_setting(f"127.0.0.1:{hook.port}")
        outcome = webhook.post(hook.url(), b'{"a": 1}', {"X-Extra": "1", "Host": "evil"},
                               allowed=allowed, timeout=5, max_redirects=0, secret="s3cret",
                               now=1700000000.5)
        assert outcome.delivered and outcome.status == 200
        [got] = hook.received
        expected = hmac.new(b"s3cret", b'1700000000.{"a": 1}', hashlib.sha256).hexdigest()
        assert got.headers["X-Zq-Signature"] == f"sha256={expected}"
        assert got.headers["X-Zq-Signature-Timestamp"] == "1700000000"
        assert got.headers["X-Extra"] == "1" and got.headers["Host"] != "evil"
        assert webhook.signature("s3cret", 1700000000, b'{"a": 1}') == f"sha256={expected}"


def test_redirects_are_followed_to_allowed_hosts_only() -> None:
    with receiver() as hook:
        allowed = AllowedHosts.from_setting(f"127.0.0.1:{hook.port}")
        hook.redirect = hook.url("/final")
        outcome = webhook.post(hook.url("/redirect"), b"{}", {}, allowed=allowed, timeout=5,
                               max_redirects=3, secret=None, now=0)
        assert outcome.delivered and [r.path for r in hook.received] == ["/redirect", "/final"]
        hook.redirect = "http://169.254.169.254/latest/meta-data"
        outcome = webhook.post(hook.url("/redirect"), b"{}", {}, allowed=allowed, timeout=5,
                               max_redirects=3, secret=None, now=0)
        assert not outcome.delivered and "refused" in outcome.detail
        assert outcome.retry  # where it redirects is the subscriber's to change
        assert [r.path for r in hook.received] == ["/redirect", "/final", "/redirect"]


def test_zaqars_success_rule() -> None:
    with receiver() as hook:
        allowed = AllowedHosts.from_setting(f"127.0.0.1:{hook.port}")
        for status, delivered in ((204, True), (404, True), (500, False), (503, False)):
            hook.status = status
            outcome = webhook.post(hook.url(), b"{}", {}, allowed=allowed, timeout=5,
                                   max_redirects=0, secret=None, now=0)
            assert (outcome.delivered, outcome.status) == (delivered, status)


@pytest.fixture
def smtp() -> Iterator[tuple[int, list]]:  # type: ignore[type-arg]
    from aiosmtpd.controller import Controller

    got: list = []  # type: ignore[type-arg]

    class Handler:
        async def handle_DATA(self, server, session, envelope):  # type: ignore[no-untyped-def]
            got.append(envelope)
            return "250 OK"

    with socket.socket() as probe:  # a free port (aiosmtpd's start checks it by connecting)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    controller = Controller(Handler(), hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield port, got
    finally:
        controller.stop()


def test_mailto_goes_through_the_configured_smtp_server(smtp) -> None:  # type: ignore[no-untyped-def]
    port, got = smtp
    outcome = mail.send("mailto:ops@example.com", b'{"body": 1}', queue="q",
                        host="127.0.0.1", port=port, sender="zq@example.com", timeout=5)
    assert outcome.delivered
    [envelope] = got
    assert envelope.rcpt_tos == ["ops@example.com"] and envelope.mail_from == "zq@example.com"
    text = envelope.content.decode()
    assert "Subject: zq notification: queue q" in text and '{"body": 1}' in text


@pytest.mark.parametrize("subscriber", [
    "mailto:a@x.com,b@y.org?from=ceo@bank.example",  # two recipients, a forged From
    "mailto:a@x.com,b@y.org",
    "mailto:ops@example.com?subject=Poison",
    "mailto:ops@example.com?cc=b@y.org",
    "mailto:a%40x.com%2Cb@y.org",
    "mailto:a@x.com;b@y.org",
])
def test_a_mailto_subscriber_mails_one_address_and_takes_no_header(  # type: ignore[no-untyped-def]
        smtp, subscriber: str) -> None:
    port, got = smtp
    outcome = mail.send(subscriber, b"{}", queue="q", host="127.0.0.1", port=port,
                        sender="zq@example.com", timeout=5)
    assert not outcome.delivered and outcome.detail.startswith("refused: ")
    assert not outcome.retry and got == []


def test_mail_without_an_smtp_host_fails_and_says_so() -> None:
    outcome = mail.send("mailto:ops@example.com", b"{}", queue="q", host="", port=25,
                        sender="zq@localhost", timeout=5)
    assert not outcome.delivered and "smtp_host" in outcome.detail
    assert not outcome.retry  # the setting is read at start: no retry could succeed


def test_created_at_reads_the_exact_creation_or_errs_early() -> None:
    from tests.notifications.helpers import FakeSubscription
    from zq.notifications.pump import created_at

    # Made at 100.4, read at 109.9: age 9 (truncated); expires - ttl is exact.
    made = FakeSubscription("s", "p", "q", "http://x", ttl=60, expires=160.4, age=9)
    assert created_at(made, 109.9) == 160.4 - 60
    # The ttl changed at 105 (expires - ttl later than the creation): two seconds early.
    patched = FakeSubscription("s", "p", "q", "http://x", ttl=60, expires=165.0, age=9)
    assert created_at(patched, 109.9) == 109.9 - 9 - 2


def test_a_kept_alive_connection_is_reused_and_a_stale_one_replaced() -> None:
    with receiver() as hook:
        allowed = AllowedHosts.from_setting(f"127.0.0.1:{hook.port}")
        pool = webhook.Connections()

        def send() -> webhook.Outcome:
            return webhook.post(hook.url(), b"{}", {}, allowed=allowed, timeout=5,
                                max_redirects=0, secret=None, now=0, connections=pool)

        assert send().delivered and send().delivered
        assert hook.received[0].peer == hook.received[1].peer  # one connection for both
        idle = pool.take(allowed.check(hook.url()))
        assert idle is not None and idle.sock is not None
        idle.sock.close()  # as if the subscriber had closed it meanwhile
        pool.give(allowed.check(hook.url()), idle)
        outcome = send()
        assert outcome.delivered and len(hook.received) == 3
        assert hook.received[2].peer != hook.received[0].peer
