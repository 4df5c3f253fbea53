"""Long-poll claims against a real ``zq serve`` (two workers): the client, stats and consumers.

- ``zq.client.Consumer`` with its default ``wait`` waits in the server and
  gets a message posted after it started, with no idle sleep, and learns
  from ``X-Zq-Wait`` that the server waits;
- SIGTERM ends a consumer process whose claim is waiting, at once, and
  leaves no claim behind;
- ``GET .../stats`` counts the claims waiting on the queue, and ``GET
  .../consumers`` each Client-ID's, whichever worker holds them.

The behaviour against a server that ignores ``wait`` (Zaqar) is in
tests/client/test_long_poll.py.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from zq.client import Client, Consumer

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 30.0  # seconds: the most any step here may take on a loaded machine


def eventually(predicate: Callable[[], object], what: str) -> object:
    deadline = time.monotonic() + TIMEOUT
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def waiting(client: Client, queue: str) -> int:
    return client._call("GET", f"/queues/{queue}/stats").json().get("waiting", -1)


def test_a_waiting_consumer_gets_the_message_posted_after_it_started(server, project):
    handled: list[object] = []
    sleeps: list[float] = []
    with Client(server.url, project=project) as client:
        client.create_queue("lp")
        consumer = Consumer(server.url, "lp", lambda m: handled.append(m.body),
                            project=project, wait=3, sleep=sleeps.append)
        thread = threading.Thread(target=consumer.run, kwargs={"handle_signals": False})
        thread.start()
        try:
            eventually(lambda: waiting(client, "lp") == 1, "the consumer's claim to wait")
            client.post("lp", {"n": 1}, ttl=300)
            eventually(lambda: handled, "the message to be handled")
        finally:
            consumer.stop()
            thread.join(TIMEOUT)
        assert handled == [{"n": 1}]
        assert consumer.server_waits is True and consumer.long_polling
        assert sleeps == []  # never an idle sleep: every empty claim was held
        assert client.stats("lp").total == 0
        eventually(lambda: waiting(client, "lp") == 0, "no claim to wait any more")


CONSUMER = '''
import os
from zq.client import Consumer

consumer = Consumer(os.environ["ZQ_URL"], "sig", lambda m: print("handled", flush=True),
                    project=os.environ["ZQ_PROJECT"], wait=20)
print("ready", flush=True)
stats = consumer.run()
print("stopped", stats.long_polls, flush=True)
'''


def test_sigterm_ends_a_consumer_whose_claim_waits_at_once(server, project, tmp_path):
    script = tmp_path / "consumer.py"
    script.write_text(CONSUMER)
    with Client(server.url, project=project) as client:
        client.create_queue("sig")
        process = subprocess.Popen(
            [sys.executable, str(script)], cwd=ROOT, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
            env={**server.env, "ZQ_URL": server.url, "ZQ_PROJECT": project,
                 "PYTHONPATH": str(ROOT)})
        try:
            assert process.stdout.readline().strip() == "ready"
            eventually(lambda: waiting(client, "sig") == 1, "the consumer's claim to wait")
            sent = time.monotonic()
            process.send_signal(signal.SIGTERM)
            out, err = process.communicate(timeout=TIMEOUT)
            took = time.monotonic() - sent
        finally:
            if process.poll() is None:
                process.kill()
        assert process.returncode == 0, err
        assert out.splitlines()[-1] == "stopped 1"
        assert took < 15  # well within the 20 s the claim asked to wait
        # The server saw the client go: nothing waits, nothing is held.
        eventually(lambda: waiting(client, "sig") == 0, "the server to drop the waiter")
        client.post("sig", "after", ttl=300)
        claim = client.claim("sig", limit=5)
        assert claim is not None and [m.body for m in claim.messages] == ["after"]


def test_stats_and_consumers_count_the_claims_waiting_in_every_worker(server, project):
    ids = ["6f1c1c1e-0000-4000-8000-00000000000" + str(n) for n in range(3)]
    answers: list[int] = []

    def wait_once(client_id: str) -> None:
        with httpx.Client(base_url=server.url, timeout=TIMEOUT) as http:
            answer = http.post("/v2/queues/census/claims", params={"wait": "4"},
                               json={"ttl": 60, "grace": 60},
                               headers={"Client-ID": client_id, "X-Project-ID": project})
            answers.append(answer.status_code)
            assert answer.headers.get("X-Zq-Wait") == "4"

    with Client(server.url, project=project) as client:
        client.create_queue("census")
        assert waiting(client, "census") == 0
        # Two claims of one Client-ID, one of another: with two workers they
        # are held where granian sent them, and any worker counts them all.
        threads = [threading.Thread(target=wait_once, args=(client_id,))
                   for client_id in (ids[0], ids[0], ids[1])]
        for thread in threads:
            thread.start()
        try:
            eventually(lambda: waiting(client, "census") == 3, "three waiting claims")
            rows = {row["client_id"]: row for row in
                    client._call("GET", "/queues/census/consumers").json()["consumers"]}
            assert {c: rows[c]["waiting"] for c in (ids[0], ids[1])} == {ids[0]: 2, ids[1]: 1}
            for row in rows.values():  # a consumer that never claimed is listed as waiting
                assert row["live_claims"] == 0 and row["last_claim"] is None
        finally:
            for thread in threads:
                thread.join(TIMEOUT)
        assert answers == [204, 204, 204]
        eventually(lambda: waiting(client, "census") == 0, "the waits to end")
