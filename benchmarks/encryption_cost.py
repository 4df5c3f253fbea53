"""What ``_enable_encrypt_messages`` costs per post and per claim.

    python -m benchmarks.encryption_cost [URI] [-n N] [--rounds R] [--body-bytes B]
    (from the repository root; URI defaults to a temporary SQLite file)

Through the service layer (where bodies are sealed and opened), times N
posts (batches of 10) and then N messages taken by claim(10) + delete
cycles, on a queue without the flag and on one with it, in R rounds
(alternating which goes first) so both see the same backend state.
Prints one JSON line per phase and mode with the best round's messages
per wall second and the zq process's CPU microseconds per message (which
other processes' load hardly changes); then, per phase, encrypted/plain
messages per second (below 1: encryption costs) and encrypted/plain CPU
per message (above 1: encryption costs); then the cipher alone (seal and
open of one body, microseconds). Every queue is deleted at the end; the events stay in the
backend's event log, so point it at a scratch database or Redis prefix.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import tempfile
import time
import uuid

from zq.clock import SystemClock
from zq.config import EncryptionConfig, Limits
from zq.encryption import BodyCipher
from zq.pooling import SingleBackend
from zq.service import QueueService
from zq.service.bodies import encode_body
from zq.storage import open_storage

BATCH = 10


def run_round(svc: QueueService, project: str, queue: str, total: int,
              body: dict[str, str]) -> dict[str, float]:
    document = {"messages": [{"body": body}] * BATCH}
    started, cpu = time.perf_counter(), time.process_time()
    for _ in range(total // BATCH):
        svc.post_messages(project, queue, document, client_id=None, body_size=1000)
    posted, posted_cpu = time.perf_counter() - started, time.process_time() - cpu
    started, cpu = time.perf_counter(), time.process_time()
    done = 0
    while done < total:
        claim = svc.claim(project, queue, None, limit=BATCH, client_id=None)
        if claim is None:
            break
        svc.delete_messages(project, queue, [m.id for m in claim.messages],
                            claim_ids=[claim.id], client_id=None)
        done += len(claim.messages)
    claimed, claimed_cpu = time.perf_counter() - started, time.process_time() - cpu
    # Rates, higher is better: messages per wall second and per CPU second
    # of this process (the latter hardly moves with other processes' load).
    return {"post": total / posted, "claim_delete": done / claimed,
            "post_cpu": total / posted_cpu, "claim_delete_cpu": done / claimed_cpu}


def cipher_alone(cipher: BodyCipher, body: str, repeat: int = 20000) -> dict[str, float]:
    started = time.perf_counter()
    for _ in range(repeat):
        sealed = cipher.seal(body, "bench", "m")
    seal = (time.perf_counter() - started) / repeat
    started = time.perf_counter()
    for _ in range(repeat):
        cipher.open(sealed, "bench", "m")
    opened = (time.perf_counter() - started) / repeat
    return {"seal_us": round(seal * 1e6, 2), "open_us": round(opened * 1e6, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="examples:\n"
               "  python -m benchmarks.encryption_cost\n"
               "  python -m benchmarks.encryption_cost redis://127.0.0.1:6379/11?prefix=enc "
               "-n 5000 --rounds 5 --body-bytes 1024",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("uri", nargs="?", help="storage URI (default: temporary SQLite)")
    parser.add_argument("-n", type=int, default=2000,
                        help="messages per phase and round (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds, alternating which queue goes first (default: %(default)s)")
    parser.add_argument("--body-bytes", type=int, default=100,
                        help="bytes of each message's payload (default: %(default)s)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        uri = args.uri or f"sqlite:///{scratch}/bench.sqlite3"
        if not args.uri:
            from zq.storage.sql import migrate
            migrate.upgrade(uri)
        storage = open_storage(uri, clock=SystemClock())
        key = base64.b64encode(os.urandom(32)).decode()
        cipher = BodyCipher.from_config(EncryptionConfig(keys=f"k1:{key}", fingerprint_key=key))
        assert cipher is not None
        svc = QueueService(Limits(), SingleBackend(storage), cipher=cipher)
        project = f"bench-{uuid.uuid4().hex[:8]}"
        body = {"event": "benchmark", "payload": "x" * args.body_bytes}
        modes = {"plain": {}, "encrypted": {"_enable_encrypt_messages": True}}
        for mode, metadata in modes.items():
            svc.create_queue(project, mode, metadata)
        best: dict[str, dict[str, float]] = {mode: {} for mode in modes}
        for round_number in range(args.rounds):
            # Alternate which mode goes first, so neither always runs warm.
            for mode in sorted(modes, reverse=bool(round_number % 2)):
                for phase, rate in run_round(svc, project, mode, args.n, body).items():
                    best[mode][phase] = max(best[mode].get(phase, 0.0), rate)
        for phase in ("post", "claim_delete"):
            for mode in modes:
                print(json.dumps({
                    "phase": phase, "mode": mode, "backend": uri.split(":")[0],
                    "messages": args.n, "per_second": round(best[mode][phase]),
                    "cpu_us_per_message": round(1e6 / best[mode][f"{phase}_cpu"], 1)}))
            print(json.dumps({
                "phase": phase,
                "encrypted_vs_plain": round(best["encrypted"][phase] / best["plain"][phase], 3),
                "cpu_per_message_encrypted_vs_plain": round(
                    best["plain"][f"{phase}_cpu"] / best["encrypted"][f"{phase}_cpu"], 3)}))
        print(json.dumps({"cipher_alone": cipher_alone(cipher, encode_body(body)),
                          "body_bytes": len(encode_body(body))}))
        for mode in modes:
            svc.delete_queue(project, mode)
        storage.close()


if __name__ == "__main__":
    main()
