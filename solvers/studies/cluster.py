"""The dask client of a sweep: a private, encrypted local cluster, or a validated address.

- A new ``LocalCluster`` listens on 127.0.0.1 only, speaks TLS with a throw-away certificate
  authority (:meth:`distributed.security.Security.temporary`: only this process holds the
  keys, so no other local user can submit work), and serves no HTTP routes (dask always
  opens an HTTP port; it gets a random port and answers 404) unless ``dashboard=True``.
- ``--scheduler ADDRESS`` must be ``[tcp://|tls://]host:port``; a scheduler that does not
  answer within ``CONNECT_TIMEOUT`` seconds is an error, not a hang. The address of a local
  cluster of this same process is reached with that cluster's keys.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

CONNECT_TIMEOUT = 10  # seconds
SCHEMES = ("tcp", "tls")
DASHBOARD_ADDRESS = "127.0.0.1:8787"
log = logging.getLogger(__name__)
_KEYS: dict[str, Any] = {}  # scheduler address -> Security of the local clusters of this process


class SchedulerAddressError(ValueError):
    """A ``--scheduler`` address that is not ``[tcp://|tls://]host:port``."""


def check_scheduler(address: str) -> str:
    """The address with its scheme (``tcp://`` added when missing); raises
    :class:`SchedulerAddressError` for anything else."""
    text = address.strip()
    full = text if "://" in text else f"tcp://{text}"
    parts = urlsplit(full)
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme not in SCHEMES or not parts.hostname or port is None or not 0 < port < 65536 \
            or parts.path not in ("", "/") or parts.query or parts.username:
        raise SchedulerAddressError(f"--scheduler: expected [tcp://|tls://]host:port, e.g. "
                                    f"tcp://10.0.0.5:8786 (got {address[:200]!r})")
    return f"{parts.scheme}://{parts.netloc}"


@contextmanager
def dask_client(scheduler: str | None = None, workers: int | None = None,
                processes: bool = True, dashboard: bool = False,
                timeout: float = CONNECT_TIMEOUT) -> Iterator[Any]:
    """A ``dask.distributed.Client``: of ``scheduler`` (reached within ``timeout`` seconds),
    or of a new private ``LocalCluster``."""
    from dask.distributed import Client

    if scheduler:
        address = check_scheduler(scheduler)
        try:
            client = Client(address, timeout=timeout, security=_KEYS.get(address))
        except (OSError, TimeoutError) as err:
            raise RuntimeError(f"cannot reach the dask scheduler at {address} within "
                               f"{timeout:g} s ({err})") from None
        with client:
            yield client
        return
    with _local_cluster(workers, processes, dashboard) as (cluster, security), \
            Client(cluster, security=security) as client:
        yield client


@contextmanager
def _local_cluster(workers: int | None, processes: bool, dashboard: bool) -> Iterator[Any]:
    import dask
    from dask.distributed import LocalCluster

    security = _security(processes)
    routes = {} if dashboard else {"distributed.scheduler.http.routes": [],
                                   "distributed.worker.http.routes": []}
    network = {"host": "127.0.0.1", "protocol": "tls://", "security": security,
               "worker_dashboard_address": "127.0.0.1:0",
               "scheduler_kwargs": {"dashboard": dashboard, "dashboard_address":
                                    DASHBOARD_ADDRESS if dashboard else "127.0.0.1:0"}} \
        if processes else {}
    with dask.config.set(routes), LocalCluster(
            n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
            processes=processes, dashboard_address=DASHBOARD_ADDRESS if dashboard else None,
            silence_logs=logging.ERROR, **network) as cluster:
        _KEYS[cluster.scheduler_address] = security
        try:
            yield cluster, security
        finally:
            _KEYS.pop(cluster.scheduler_address, None)


def _security(processes: bool) -> Any:
    """TLS with a temporary CA for a multi-process cluster (in-process: no sockets at all)."""
    if not processes:
        return None
    from distributed.security import Security

    return Security.temporary()
