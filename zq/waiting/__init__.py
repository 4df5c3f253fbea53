"""Waiting claims: ``POST /v2/queues/{q}/claims?wait=S`` held in the worker's event loop.

A claim that finds nothing and asks to wait is answered by the falcon app
as usual (204), with a ``ClaimWait`` in its WSGI environ (claim_wait.py).
zq.buffered_wsgi, which runs the app on its threads, sees it and keeps the
request in its event loop instead of answering: no thread is held while it
waits. The request is parked in this worker's ``WaitingClaims``
(waiters.py), per (project, queue) in arrival order; a wake-up lets the
first idle waiter run the claim again on an app thread, and the 204 goes
out only when the wait is over. Wake-ups come from:

- this process: the service reports each post, release, retry reject and
  redrive it made (``WaitingClaims.wake_threadsafe``);
- the backend: ``Storage.wakeups.listen`` where the driver has
  notifications (zq.storage.wakeups);
- the re-check (recheck.py): once per interval, one query per backend for
  every queue this worker's claims wait on, which also sets a timer for
  the moment a delay, backoff or claim expiry makes a message claimable.

The parts:

- claim_wait.py: the marker the app leaves in the environ, and the undo
  (release) of a claim made for a client that has gone;
- waiters.py: the registry of one worker's waiting claims;
- recheck.py: the periodic look at the waited queues, and the listeners.
"""

from zq.waiting.claim_wait import ENVIRON_KEY, ClaimWait
from zq.waiting.waiters import WaitingClaims

__all__ = ["ENVIRON_KEY", "ClaimWait", "WaitingClaims"]
