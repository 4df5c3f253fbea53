"""Prometheus metrics: counters from the event log, per-queue gauges, HTTP latency.

See docs/metrics.md for what each series counts and when it moves.
"""
