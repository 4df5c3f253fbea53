"""The cost of notifications and metrics on the post and claim-delete paths: on vs off.

    python -m benchmarks.notifications_cost [--rounds 3] [--duration 8] [--storage URI]

Starts two ``zq serve --workers 2`` on the same kind of backend (default:
Redis db 11 under fresh key prefixes, removed afterwards): "on" with
``[metrics]`` and ``[notifications]`` enabled, a webhook subscription on
every queue the load uses (a local receiver answering 204, so every
posted message is a delivered notification) and /metrics scraped every 5
s; "off" with both disabled. Then runs the same post and claim-delete
loads (8 client threads, 10 messages a request) against each in turn,
alternating which goes first, ``--rounds`` times, and prints each run,
the median msgs/s of each side and their ratio, the notifications the
receiver got, and the load average (the machine may be shared).
"""

from __future__ import annotations

import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from benchmarks.on_off import alternate, parse_args, servers

THREADS = 8
BATCH = 10
PROJECT = "bench-notify"


class Receiver:
    def __init__(self) -> None:
        self.count = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real webhook servers

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.count += 1
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def headers() -> dict[str, str]:
    return {"Client-ID": str(uuid.uuid4()), "X-Project-ID": PROJECT}


BODY = {"messages": [{"ttl": 3600, "body": {"data": "x" * 200}} for _ in range(BATCH)]}


def run_threads(work, duration: float) -> float:  # type: ignore[no-untyped-def]
    """msgs/s of THREADS threads running ``work(client) -> messages`` until ``duration``."""
    done = [0] * THREADS
    deadline = time.monotonic() + duration

    def worker(index: int) -> None:
        with httpx.Client(headers=headers(), timeout=30, trust_env=False) as client:
            while time.monotonic() < deadline:
                done[index] += work(client)

    started = time.monotonic()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(done) / (time.monotonic() - started)


def post_load(url: str, queue: str, duration: float) -> float:
    def work(client: httpx.Client) -> int:
        answer = client.post(f"{url}/v2/queues/{queue}/messages", json=BODY)
        return BATCH if answer.status_code == 201 else 0
    return run_threads(work, duration)


def claim_delete_load(url: str, queue: str, duration: float) -> float:
    def work(client: httpx.Client) -> int:
        answer = client.post(f"{url}/v2/queues/{queue}/claims?limit={BATCH}",
                             json={"ttl": 60, "grace": 60})
        if answer.status_code != 201:
            return 0
        ids = [m["href"].rsplit("/", 1)[1].split("?")[0] for m in answer.json()["messages"]]
        claim_id = answer.headers["Location"].rstrip("/").rsplit("/", 1)[1].split("?")[0]
        client.delete(f"{url}/v2/queues/{queue}/messages",
                      params={"ids": ",".join(ids), "claim_ids": claim_id})
        return len(ids)
    return run_threads(work, duration)


def subscribe(url: str, queue: str, hook_port: int) -> None:
    answer = httpx.post(f"{url}/v2/queues/{queue}/subscriptions", headers=headers(),
                        json={"subscriber": f"http://127.0.0.1:{hook_port}/{queue}",
                              "ttl": 86400}, trust_env=False)
    assert answer.status_code == 201, answer.text


def fill(url: str, queue: str, messages: int) -> None:
    with httpx.Client(headers=headers(), timeout=60, trust_env=False) as client:
        for _ in range(messages // BATCH):
            client.post(f"{url}/v2/queues/{queue}/messages", json=BODY)


def main() -> int:
    args = parse_args(__doc__, "benchmarks.notifications_cost")
    print(f"load average before: {Path('/proc/loadavg').read_text().strip()}", flush=True)
    hook = Receiver()
    envs = {side: {"ZQ_METRICS_ENABLED": flag, "ZQ_NOTIFICATIONS_ENABLED": flag,
                   "ZQ_NOTIFICATIONS_ALLOWED_HOSTS": f"127.0.0.1:{hook.port}"}
            for side, flag in (("on", "true"), ("off", "false"))}

    with servers(args.storage, envs, scrape="on") as urls:
        def run(workload: str, side: str) -> float:
            url = urls[side]
            queue = f"{workload}-{uuid.uuid4().hex[:8]}"
            if side == "on":
                subscribe(url, queue, hook.port)
            if workload == "post":
                return post_load(url, queue, args.duration)
            fill(url, queue, 6000)
            return claim_delete_load(url, queue, args.duration)

        alternate(args.rounds, ("post", "claim-delete"), run,
                  note=lambda: f" (notifications received so far {hook.count})")
        time.sleep(5)  # the notifier's last deliveries, counted below
    print(f"notifications received: {hook.count}")
    print(f"load average after: {Path('/proc/loadavg').read_text().strip()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
