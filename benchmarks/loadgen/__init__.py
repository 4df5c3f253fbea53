"""A load generator for the Zaqar v2 HTTP API (zq and OpenStack Zaqar alike).

    python -m benchmarks.loadgen --url http://127.0.0.1:8888 --workload post

Workloads (zq.benchmarks.loadgen.workloads): ``ping`` (the generator's own
ceiling, against any endpoint), ``post``, ``claim-delete``, ``cycle`` and
``poison``. Each prints one JSON line. Only loopback addresses are accepted.
"""
