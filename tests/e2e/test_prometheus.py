"""Metrics end to end: a real ``zq serve`` with two workers, and a real Prometheus.

The Prometheus server comes from the distribution's ``prometheus`` package
(.ci/run installs it; CI never skips these tests). It scrapes the server
every second, evaluates docs/alerts.yml every second, and the test asks its
query API whether the dead letter counter moved and the alert fired.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.server import ROOT, ServerProcess, clean_environment
from tests.prometheus_tools import require

DEADLINE = 40.0  # seconds for Prometheus to see what the test expects
POISON = 3  # messages that end in the dead letter queue


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def zq_server(tmp_path: Path) -> Iterator[tuple[ServerProcess, Path]]:
    """``zq serve`` on SQLite, two workers; its metrics directory under tmp_path."""
    env = clean_environment(tmp_path / "data")
    env["TMPDIR"] = str(tmp_path)  # where zq serve creates its metrics directory
    # Only the two workers write metric files: the notifier process (which
    # writes its own) is off, so "two files" means "both workers served".
    env["ZQ_NOTIFICATIONS_ENABLED"] = "false"
    server = ServerProcess(tmp_path / "zq.log", env, "--workers", "2").start()
    try:
        yield server, tmp_path
    finally:
        server.stop()


def headers(project: str = "e2e-metrics") -> dict[str, str]:
    return {"Client-ID": str(uuid.uuid4()), "X-Project-ID": project}


def samples(url: str) -> dict[tuple[str, tuple], float]:
    text = httpx.get(f"{url}/metrics", timeout=10, trust_env=False).text
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_one_scrape_sees_every_workers_counts(zq_server) -> None:
    server, tmp_path = zq_server
    requests = 40
    for _ in range(requests):  # a fresh connection each: the kernel spreads them
        response = httpx.post(f"{server.url}/v2/queues/spread/messages", headers=headers(),
                              json={"messages": [{"body": 1}]}, timeout=10, trust_env=False)
        assert response.status_code == 201
    [directory] = tmp_path.glob("zq-metrics-*")
    assert len(list(directory.glob("histogram_*.db"))) == 2  # both workers served
    route = (("method", "POST"), ("route", "/v2/queues/{queue_name}/messages"),
             ("status", "201"))
    assert samples(server.url)[("zq_http_request_duration_seconds_count", route)] == requests
    time.sleep(2.5)  # the tail counts events once they are 2 s old (zq.metrics.tail.SETTLE)
    assert samples(server.url)[("zq_messages_posted_total", ())] == requests

    server.stop()
    assert not directory.exists()  # removed at stop


@pytest.fixture
def prometheus(tmp_path: Path, zq_server) -> Iterator[str]:
    """A Prometheus scraping the zq server every second with docs/alerts.yml; its URL."""
    binary = require("prometheus")
    server, _ = zq_server
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        f"rule_files:\n  - {ROOT / 'docs' / 'alerts.yml'}\n"
        "scrape_configs:\n  - job_name: zq\n"
        f"    static_configs:\n      - targets: ['{server.url.removeprefix('http://')}']\n"
    )
    with open(tmp_path / "prometheus.log", "wb") as log:
        process = subprocess.Popen(
            [binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{port}"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def query(prometheus: str, expr: str) -> list[dict]:
    with contextlib.suppress(httpx.HTTPError):
        response = httpx.get(f"{prometheus}/api/v1/query", params={"query": expr}, timeout=5,
                             trust_env=False)
        if response.status_code == 200:
            return response.json()["data"]["result"]
    return []


def wait_for(what: str, check) -> object:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.5)
    raise AssertionError(f"Prometheus never saw {what} within {DEADLINE} s")


def test_prometheus_sees_dead_letters_and_fires_the_alert(zq_server, prometheus) -> None:
    server, _ = zq_server
    # The counter's 0 must be scraped before the moves, for increase() to see them.
    wait_for("zq up with a dead letter counter", lambda: query(
        prometheus, 'zq_messages_dead_lettered_total{reason="max_claim_count"} == 0'))

    client = httpx.Client(base_url=f"{server.url}/v2/queues", headers=headers(),
                          timeout=10, trust_env=False)
    with client:
        assert client.put("/poison", json={"_max_claim_count": 1,
                                           "_dead_letter_queue": "poison-dlq"}).status_code == 201
        body = {"messages": [{"body": {"n": n}} for n in range(POISON)]}
        assert client.post("/poison/messages", json=body).status_code == 201
        # A consumer claims the messages and fails them (releases its claim):
        # the next claim finds them exhausted and moves them.
        claim = client.post("/poison/claims", json={"ttl": 60}, params={"limit": POISON})
        assert claim.status_code == 201
        assert client.delete(server.url + claim.headers["location"]).status_code == 204
        assert client.post("/poison/claims", json={"ttl": 60}).status_code == 204

    wait_for(f"{POISON} dead lettered messages", lambda: query(
        prometheus, f'zq_messages_dead_lettered_total{{reason="max_claim_count"}} == {POISON}'))
    wait_for("the dead letter queue's depth", lambda: query(
        prometheus, f'zq_queue_dead_letter_messages{{queue="poison"}} == {POISON}'))
    alerts = wait_for("ZqDeadLetterArrivals firing", lambda: query(
        prometheus, 'ALERTS{alertname="ZqDeadLetterArrivals", alertstate="firing"}'))
    assert alerts[0]["metric"]["reason"] == "max_claim_count"
