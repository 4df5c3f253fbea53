"""``spark-submit zq/analytics/job.py`` runs the job as a script, with zq/analytics first on
sys.path: a module there named like a standard one (``numbers.py``) hides it from Spark."""

from __future__ import annotations

import sys
from pathlib import Path

import zq.analytics


def test_no_module_of_the_job_directory_hides_a_standard_one():
    here = Path(zq.analytics.__file__).parent
    names = {path.stem for path in here.glob("*.py")} | {
        path.name for path in here.iterdir() if (path / "__init__.py").exists()}
    assert not names & sys.stdlib_module_names
