import itertools

import pytest

from tests.backends import backend_name, project, storage, storage_factory
from zq.clock import ManualClock

__all__ = ["backend_name", "clock", "project", "storage", "storage_factory"]

_STARTS = itertools.count()


@pytest.fixture
def clock() -> ManualClock:
    """A clock later than every earlier test's: the session's event log is shared,
    and a log without final order (MongoDB without transactions) holds back
    events "younger" than the settle window, which an earlier test's clock
    that ran ahead would make of its events."""
    return ManualClock(start=1_800_000_000.0 + 10_000.0 * next(_STARTS))
