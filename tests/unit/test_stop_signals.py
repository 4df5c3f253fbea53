"""A stop signal the kernel hands to another thread still wakes the main thread."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# The main thread blocks on a lock that only its SIGTERM handler releases,
# as granian's worker does; SIGTERM is then sent to another thread only.
PROGRAM = textwrap.dedent("""
    import signal, sys, threading, time
    from zq import stop_signals
    if sys.argv[1] == "forward":
        stop_signals.forward_to_main_thread()
    gate = threading.Lock()
    gate.acquire()
    signal.signal(signal.SIGTERM, lambda number, frame: gate.release())
    other = threading.Thread(target=time.sleep, args=(60,), daemon=True)
    other.start()
    signal.pthread_kill(other.ident, signal.SIGTERM)
    gate.acquire()
    print("stopped")
""")


def run(mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PROGRAM, mode], capture_output=True,
                          text=True, timeout=3)


def test_a_signal_caught_by_another_thread_wakes_the_main_thread() -> None:
    done = run("forward")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "stopped"


def test_without_forwarding_the_main_thread_sleeps_on() -> None:
    # Why the forwarding exists: Python only notes the signal.
    with pytest.raises(subprocess.TimeoutExpired):
        run("plain")
