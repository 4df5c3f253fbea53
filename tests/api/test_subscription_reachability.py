"""A webhook subscriber that ``[notifications] allowed_hosts`` can never allow is a 400."""

from __future__ import annotations

import pytest

from tests.api.helpers import assert_error
from zq.config import Config, NotificationsConfig

BASE = "/v2/queues/q/subscriptions"


@pytest.fixture
def config() -> Config:
    return Config(notifications=NotificationsConfig(
        allowed_hosts="127.0.0.1:19110, hooks.example.org:443, 10.0.0.0/8"))


@pytest.mark.parametrize(("subscriber", "why"), [
    ("http://127.0.0.1:19111/hook",
     "port 19111 is not allowed for 127.0.0.1 (allowed_hosts lists it with other ports only)"),
    ("http://hooks.example.org/hook",
     "port 80 is not allowed for hooks.example.org (allowed_hosts lists it with other ports "
     "only)"),
    ("https://elsewhere.example.com/hook", "elsewhere.example.com is not in allowed_hosts"),
    ("http://192.168.1.5:19110/hook", "192.168.1.5 is not in allowed_hosts"),
])
def test_a_subscriber_allowed_hosts_never_allows_is_refused_at_create_and_patch(
        api, subscriber: str, why: str) -> None:
    refused = api.post(BASE, json={"subscriber": subscriber})
    assert_error(refused, 400, f"The subscriber {subscriber!r} can never be notified: {why} "
                               "([notifications] allowed_hosts).")
    assert api.get(BASE).json["subscriptions"] == []
    created = api.post(BASE, json={"subscriber": "http://127.0.0.1:19110/ok"})
    assert created.status_code == 201
    sid = created.json["subscription_id"]
    patched = api.patch(f"{BASE}/{sid}", json={"subscriber": subscriber})
    assert patched.status_code == 400 and why in patched.json["description"]
    assert api.get(f"{BASE}/{sid}").json["subscriber"] == "http://127.0.0.1:19110/ok"


@pytest.mark.parametrize("subscriber", [
    "http://127.0.0.1:19110/hook",
    "https://hooks.example.org/hook",  # listed: where it resolves is the notifier's to check
    "http://10.2.3.4:8080/hook",  # a CIDR entry without a port
    "mailto:ops@example.com",  # not a webhook
])
def test_a_subscriber_allowed_hosts_may_allow_is_taken(api, subscriber: str) -> None:
    assert api.post(BASE, json={"subscriber": subscriber}).status_code == 201
