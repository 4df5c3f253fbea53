"""Refusing dead letter queues that would form a cycle (checked when metadata is written)."""

from __future__ import annotations

from collections.abc import Callable

from zq.errors import DeadLetterConflict

# Following a chain longer than this means the metadata is corrupt (a cycle
# written before validation existed, or by a race); refuse rather than loop.
MAX_CHAIN_LENGTH = 64


def check_chain(
    source: str,
    target: str,
    next_in_chain: Callable[[str], str | None],
) -> None:
    """Refuse a dead letter queue that is the source or leads back to it.

    ``next_in_chain(q)`` gives queue q's own dead letter queue (or None).
    Raises DeadLetterConflict naming the cycle.
    """
    if target == source:
        raise DeadLetterConflict(
            f"Queue {source!r} cannot be its own dead letter queue."
        )
    path = [source, target]
    current: str | None = target
    for _ in range(MAX_CHAIN_LENGTH):
        current = next_in_chain(current)
        if current is None:
            return
        path.append(current)
        if current == source:
            raise DeadLetterConflict(
                "Dead letter queues would form a cycle: " + " -> ".join(path) + "."
            )
        if current in path[1:-1]:
            # An existing cycle further down, not involving source: the move
            # chain never returns to source, but it never ends either.
            raise DeadLetterConflict(
                "The dead letter chain already contains a cycle: "
                + " -> ".join(path) + "."
            )
    raise DeadLetterConflict(
        f"The dead letter chain from {source!r} is longer than {MAX_CHAIN_LENGTH} queues."
    )
