"""Former entry point of the HTTP benchmark; the generator is now ``benchmarks.loadgen``.

    python benchmarks/http_throughput.py --url http://127.0.0.1:8888

runs ``python -m benchmarks.loadgen`` with the same arguments.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks.loadgen.cli import main

    raise SystemExit(main())
