"""The cost of metrics on the post and claim-delete paths: on vs off, same session.

    python -m benchmarks.metrics_overhead [--rounds 3] [--duration 8] [--storage URI]

Starts two ``zq serve --workers 2`` on the same backend (default: Redis db
11 under fresh key prefixes, removed afterwards): one with ``[metrics]
enabled``, scraped every 5 seconds as a Prometheus would (a scrape is when
the event tail counts, so its cost is in the figure), and one with metrics
off. Then runs the load generator's post and claim-delete workloads against
each in turn, alternating which goes first, ``--rounds`` times, and prints
every run and, per workload, the median msgs/s of each and their ratio
(on / off; 1.00 means no cost). The machine may be shared: the alternation
and the medians are there to make the two sides see the same noise.
"""

from __future__ import annotations

import json
import subprocess
import sys

from benchmarks.on_off import ROOT, alternate, parse_args, servers

WORKLOADS = ("post", "claim-delete")
# Bounds each run with the duration; claim-delete posts its backlog (requests / 2
# claims of 10 messages) before the timed part.
REQUESTS = 4000


def load(url: str, workload: str, duration: float) -> float:
    """msgs/s of one loadgen run."""
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.loadgen", "--url", url, "--workload", workload,
         "--duration", str(duration), "--requests", str(REQUESTS)],
        cwd=ROOT, capture_output=True, text=True, check=True)
    return float(json.loads(out.stdout.strip().splitlines()[-1])["msgs_per_s"])


def main() -> int:
    args = parse_args(__doc__, "benchmarks.metrics_overhead")
    envs = {"on": {"ZQ_METRICS_ENABLED": "true"}, "off": {"ZQ_METRICS_ENABLED": "false"}}
    with servers(args.storage, envs, scrape="on") as urls:
        alternate(args.rounds, WORKLOADS,
                  lambda workload, side: load(urls[side], workload, args.duration))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
