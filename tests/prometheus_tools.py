"""Finding Prometheus's binaries (the distribution's ``prometheus`` package).

In CI (``CI`` set) a missing binary fails the test: .ci/run installs the
package. Elsewhere the test is skipped, saying why.
"""

from __future__ import annotations

import os
import shutil

import pytest


def require(binary: str) -> str:
    """The path of ``binary`` (promtool, prometheus), or fail in CI / skip elsewhere."""
    path = shutil.which(binary)
    if path is not None:
        return path
    reason = f"{binary} is not installed (apt-get install prometheus)"
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; .ci/run installs it and CI never skips this test")
    pytest.skip(f"{reason}; CI never skips this test")
