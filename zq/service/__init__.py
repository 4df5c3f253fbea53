"""The service rules: one method per use case of the API (QueueService).

Between HTTP and storage: checks names and values (zq.validation), applies
defaults from queue metadata and configuration (zq.metadata), and reaches
storage only through a zq.pooling resolver; it knows nothing about HTTP.
Its parts, one job each:

- queues.py: QueueService, the public methods, each short;
- bodies.py: encoding, sealing and opening message bodies, their fingerprints;
- metadata_writes.py: compare-and-set metadata writes and the dead letter
  chain check under a project's links version;
- posts.py: a post's messages, within the post size, with the queue's defaults;
- deliveries.py: acting on a queue's metadata for a post, claim or pop (read
  cached where safe, read again when the driver finds it stale);
- rejects.py: a reject refused without a claim, and a terminal reject's move;
- redrive.py: the redrive of a dead letter queue, page by page;
- health.py: ping and the read-only health probes;
- opening.py: opening sealed bodies, leaving out the ones that cannot be;
- metadata_cache.py, subscribed.py: the per-process caches the service reads.
"""

from zq.service.queues import QueueService

__all__ = ["QueueService"]
