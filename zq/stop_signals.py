"""Stop signals reach a worker's main thread, whichever thread the kernel gave them to.

granian's worker waits for SIGTERM/SIGINT in its main thread, blocked on a
lock. The kernel delivers a signal sent to the process to any of its
threads that does not block it: granian's Rust runtime threads, the request
threads, zq's collector. Python's C handler then only notes the signal, and
the main thread sleeps on: the worker served on until the master killed it
at the end of ``[server] timeout`` (seen in about 1 stop in 10 under the
graceful shutdown test).

Python writes the number of every signal it catches to the wakeup fd, from
whichever thread caught it. A thread of ours reads it and, for a stop
signal, interrupts the main thread's wait with WAKE_SIGNAL, whose handler
does nothing: the interrupted wait runs the pending handlers, the noted
stop signal's among them, once. (Sending the stop signal itself again
would run granian's handler twice, and a second run while the first holds
its event's lock deadlocks the worker.)
"""

from __future__ import annotations

import os
import signal
import threading

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
# Ignored by default and meaningless to a server: a stray one is harmless.
WAKE_SIGNAL = signal.SIGWINCH


def forward_to_main_thread() -> threading.Thread:
    """Start forwarding; call from the main thread (handlers and wakeup fd are set there)."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)  # the C handler must never block on it
    signal.signal(WAKE_SIGNAL, lambda number, frame: None)
    signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    main = threading.main_thread().ident
    assert main is not None

    def forward() -> None:
        while data := os.read(read_end, 64):
            if any(number in STOP_SIGNALS for number in data):
                signal.pthread_kill(main, WAKE_SIGNAL)

    thread = threading.Thread(target=forward, name="zq-stop-signals", daemon=True)
    thread.start()
    return thread
