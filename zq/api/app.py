"""The falcon application: routes, middleware, JSON handling, errors."""

from __future__ import annotations

from collections.abc import Callable

import falcon
import falcon.media
import orjson

from zq.api import console, errors
from zq.api.breaker import QueueBreaker
from zq.api.claims import ClaimCollection, ClaimItem
from zq.api.consumers import QueueConsumers
from zq.api.health import Health, Ping
from zq.api.home import Home, Versions
from zq.api.identity import IDENTITY_PATH, IdentityResource
from zq.api.messages import MessageCollection, MessageItem, MessageReject
from zq.api.metrics import (
    METRICS_PATH,
    RATES_ROUTE,
    MetricsResource,
    QueueRates,
    RequestMetrics,
)
from zq.api.middleware import AccessLog, RequestId, RequestRules
from zq.api.pools import ADMIN_ROUTES, PoolingOff
from zq.api.queues import QueueCollection, QueueItem, QueuePurge, QueueStatsResource
from zq.api.redrive import QueueRedrive
from zq.api.resource import Resource
from zq.api.share import QueueShare
from zq.api.subscriptions import SUBSCRIPTION_ROUTES
from zq.auth import Authenticate, keystone
from zq.clock import Clock, SystemClock
from zq.config import Config
from zq.encryption import BodyCipher
from zq.metrics.setup import Telemetry, open_telemetry
from zq.metrics.waiting import WaitingCensus
from zq.notifications.confirmation_requests import StoredRequests
from zq.notifications.hosts import AllowedHosts
from zq.notifications.status import StatusFile
from zq.pooling import Pools
from zq.pooling.admin import PoolAdmin
from zq.pooling.setup import open_pools
from zq.service import QueueService
from zq.service.metadata_cache import MetadataCache
from zq.storage.base import Storage
from zq.subscriptions import SubscriptionService

ROUTES: list[tuple[str, type[Resource]]] = [
    ("/v2/ping", Ping),
    ("/v2/queues", QueueCollection),
    ("/v2/queues/{queue_name}", QueueItem),
    ("/v2/queues/{queue_name}/stats", QueueStatsResource),
    ("/v2/queues/{queue_name}/purge", QueuePurge),
    ("/v2/queues/{queue_name}/breaker", QueueBreaker),
    ("/v2/queues/{queue_name}/messages", MessageCollection),
    ("/v2/queues/{queue_name}/messages/{message_id}", MessageItem),
    ("/v2/queues/{queue_name}/messages/{message_id}/reject", MessageReject),
    ("/v2/queues/{queue_name}/claims", ClaimCollection),
    ("/v2/queues/{queue_name}/claims/{claim_id}", ClaimItem),
    ("/v2/queues/{queue_name}/redrive", QueueRedrive),
    ("/v2/queues/{queue_name}/consumers", QueueConsumers),
]


def create_app(
    config: Config,
    *,
    storage: Storage | None = None,
    clock: Clock | None = None,
    pools: Pools | None = None,
    admin: PoolAdmin | None = None,
    metrics_dir: str | None = None,
    notifier_status: StatusFile | None = None,
    waiting: WaitingCensus | None = None,
    on_claimable: Callable[[str, str], None] | None = None,
) -> keystone.WsgiApp:
    """The WSGI app serving the Zaqar v2 API.

    The resolver follows the configuration (zq.pooling.setup.open_pools):
    with ``[pooling] enabled`` the pools of the management store, otherwise
    ``storage`` or the one at ``config.storage.resolved_uri()``. Tests may
    pass their own ``pools`` (and ``admin``). With ``[auth] strategy =
    "keystone"`` the falcon app is returned wrapped in keystonemiddleware.
    With ``[metrics] enabled`` it serves ``GET /metrics``; ``metrics_dir`` is
    the directory ``zq serve`` shares between its workers (zq.metrics);
    ``notifier_status`` where it reports its notifier, for ``GET /v2/health``;
    ``waiting`` counts the waiting claims of this process, shared with the
    server's other workers (zq.metrics.waiting; one of this process alone
    when None); ``on_claimable`` wakes this process's waiting claims
    (zq.waiting). Raises ConfigError for unusable auth settings.
    """
    clock = clock or SystemClock()
    if pools is None:
        pools, admin = open_pools(config, clock=clock, storage=storage)
    service = QueueService(config.limits, pools,
                           metadata_cache=MetadataCache(config.server.metadata_cache),
                           cipher=BodyCipher.from_config(config.encryption), clock=clock,
                           on_claimable=on_claimable)
    telemetry = None
    if config.metrics.enabled:
        telemetry = open_telemetry(config.metrics, pools.storages, clock,
                                   multiprocess_dir=metrics_dir)
    if waiting is None:
        waiting = WaitingCensus()
    if telemetry is not None and waiting.metrics is None:
        waiting.metrics = telemetry.metrics  # the waiting gauge and wake-up counter move
    return wrap_auth(
        build_app(service, clock, config, admin=admin, telemetry=telemetry,
                  notifier_status=notifier_status, waiting=waiting), config
    )


def wrap_auth(app: falcon.App, config: Config) -> keystone.WsgiApp:
    """``app`` behind keystonemiddleware when the auth strategy asks for it."""
    if config.auth.strategy == "keystone":
        return keystone.wrap(app, config.auth)
    return app


def _webhooks(allowed_hosts: str) -> AllowedHosts | None:
    """The hosts webhook subscribers are checked against; None when the setting
    is empty (webhooks not set up yet: subscriptions are taken, as Zaqar's)."""
    return AllowedHosts.from_setting(allowed_hosts) if allowed_hosts.strip() else None


def build_app(
    service: QueueService,
    clock: Clock,
    config: Config,
    *,
    admin: PoolAdmin | None = None,
    telemetry: Telemetry | None = None,
    notifier_status: StatusFile | None = None,
    waiting: WaitingCensus | None = None,
) -> falcon.App:
    """The app around an already built service; pool admin routes when ``admin``,
    ``GET /metrics`` and the request latency histogram when ``telemetry``;
    ``waiting`` counts the waiting claims that stats and consumers show."""
    middleware: list[object] = [RequestMetrics(telemetry)] if telemetry else []
    middleware += [
        RequestId(), AccessLog(), RequestRules(config.limits), Authenticate(config, clock),
    ]
    app = falcon.App(middleware=middleware)
    app.req_options.strip_url_path_trailing_slash = True
    json = falcon.media.JSONHandler(dumps=orjson.dumps, loads=orjson.loads)
    app.req_options.media_handlers[falcon.MEDIA_JSON] = json
    app.resp_options.media_handlers[falcon.MEDIA_JSON] = json
    errors.install(app)
    app.add_route("/", Versions())
    app.add_route("/v2", Home(pooling=admin is not None))
    for template, resource in ROUTES:
        app.add_route(template, resource(service, clock, waiting=waiting))
    app.add_route("/v2/health", Health(service, clock, notifier_status))
    app.add_route(IDENTITY_PATH, IdentityResource())
    app.add_route(
        "/v2/queues/{queue_name}/share", QueueShare(service, clock, config.signed_urls)
    )
    for template, admin_resource in ADMIN_ROUTES:
        app.add_route(template, admin_resource(admin) if admin else PoolingOff())
    subscriptions = SubscriptionService(
        config.limits, service.pools,
        require_confirmation=config.notifications.require_confirmation,
        confirmations=StoredRequests(service.pools.storage_for),
        subscribed=service.subscribed,
        webhooks=_webhooks(config.notifications.allowed_hosts))
    for template, subscription_resource in SUBSCRIPTION_ROUTES:
        app.add_route(template, subscription_resource(subscriptions, clock))
    console.install(app, config.auth.strategy)
    if telemetry is not None:
        app.add_route(METRICS_PATH, MetricsResource(
            telemetry, auth=config.auth.strategy != "none"))
        app.add_route(RATES_ROUTE, QueueRates(telemetry, config.limits))
    return app
