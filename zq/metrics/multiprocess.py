"""The metrics directory of one ``zq serve``: created at start, removed at stop."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from zq.metrics.tail import FileTailStore


@contextmanager
def metrics_directory(started: float) -> Iterator[str]:
    """A fresh private directory for the workers' metric files and the event tail.

    Fresh at every start so that no count of an earlier run is summed in;
    removed when the server stops.
    """
    directory = tempfile.mkdtemp(prefix="zq-metrics-")
    try:
        FileTailStore.create(directory, started)
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)
