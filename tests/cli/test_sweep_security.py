"""The sweep's dask cluster: TLS with throw-away keys, no HTTP routes, validated addresses."""

from __future__ import annotations

import os
import urllib.error
import urllib.request

import psutil
import pytest

from solvers.studies.cluster import SchedulerAddressError, check_scheduler, dask_client


@pytest.mark.parametrize("address, expected", [
    ("10.0.0.5:8786", "tcp://10.0.0.5:8786"), ("tls://host:1", "tls://host:1"),
    (" tcp://h:65535 ", "tcp://h:65535")])
def test_valid_scheduler_addresses(address: str, expected: str) -> None:
    assert check_scheduler(address) == expected


@pytest.mark.parametrize("address", ["bogus", "file:///etc/passwd", "tcp://", "tcp://h:99999",
                                     "http://h:1", "tcp://h:x", "tcp://u@h:1", "tcp://h:1/p",
                                     "inproc://x"])
def test_bad_scheduler_addresses(address: str) -> None:
    with pytest.raises(SchedulerAddressError, match="--scheduler: expected"):
        check_scheduler(address)


def test_unreachable_scheduler_is_an_error_not_a_hang() -> None:
    with pytest.raises(RuntimeError, match="cannot reach the dask scheduler"), \
            dask_client("tcp://127.0.0.1:1", timeout=1):
        pass


def _listening_ports() -> set[int]:
    procs = [psutil.Process(os.getpid()), *psutil.Process().children(recursive=True)]
    return {c.laddr.port for p in procs for c in p.net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN}


def test_local_cluster_is_encrypted_and_serves_no_http() -> None:
    from dask.distributed import Client

    with dask_client(workers=1) as client:
        address = client.scheduler.address
        assert address.startswith("tls://127.0.0.1:")
        assert client.submit(sum, [1, 2]).result() == 3
        with pytest.raises((TypeError, OSError)):  # no keys: refused
            Client(address, timeout=3, security=None, set_as_default=False).close()
        ports = _listening_ports()
        assert 8787 not in ports
        for port in ports:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
            except urllib.error.HTTPError as err:
                assert err.code == 404  # an HTTP server with no routes
            except (urllib.error.URLError, ConnectionError, OSError):
                pass  # not HTTP (TLS comms)
            else:
                pytest.fail(f"port {port} answers HTTP")
