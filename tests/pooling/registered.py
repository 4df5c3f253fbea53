"""Pools registered straight in a management store, for command tests."""

from __future__ import annotations

from zq.pooling.registry import PoolDef
from zq.pooling.store import open_management


def register_pools(management: str, pools: dict[str, str]) -> None:
    """Register ``{name: uri}`` as pools of weight 1 (no reachability probe)."""
    store = open_management(management)
    try:
        for name, uri in pools.items():
            store.registry.put_pool(PoolDef(name, uri, 1))
    finally:
        store.close()
