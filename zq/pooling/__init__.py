"""Pools, flavors and the catalog: which backend holds a queue.

- ``base``: the ``Pools`` protocol the service layer uses.
- ``single``: ``SingleBackend``, no pooling.
- ``resolver``: ``CatalogPools``, queues spread over pools.
- ``catalog``, ``registry``, ``placement``, ``cache``, ``generation``,
  ``schema``, ``migrate``, ``store``: the management store behind it.
- ``admin``: the pool and flavor administration the admin API calls.
"""

from zq.pooling.base import Pools
from zq.pooling.single import SingleBackend

__all__ = ["Pools", "SingleBackend"]
