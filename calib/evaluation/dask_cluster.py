"""Partitions evaluated on a Dask cluster: a ``map_reduce`` (:mod:`calib.evaluation.partitioned`) whose
partitions run on the workers and whose merges run there too, two neighbours at a time, so the client
receives one merged result and the workers hold one partition's state each, however many there are.

Every task is a pure function of its inputs (a merge builds a new state), so when a worker dies the
scheduler computes what it held again from the same inputs, with the same result.

This module is imported only when a scheduler is given: Dask is an optional dependency
(``pip install 'calib-repro[dask]'``).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from dask import delayed
from dask.delayed import Delayed
from distributed import Client, get_worker
from distributed.comm import connect as comm_connect
from distributed.comm.addressing import parse_address, parse_host_port
from distributed.scheduler import KilledWorker

from calib.evaluation.progress import Phase
from calib.validation import CalibInputError

# Seconds to wait for the scheduler to answer before giving up.
CONNECT_TIMEOUT = 10


@contextmanager
def on_cluster(scheduler, *, say: Callable[[str], None], timeout: float = CONNECT_TIMEOUT) -> Iterator[Callable]:
    """A ``map_reduce`` on the cluster of ``scheduler`` (an address, or a ``distributed.Client``, left open).

    Parameters
    ----------
    scheduler : str or distributed.Client
        The scheduler's address (``tcp://host:8786``), or a client of it.
    say : callable
        Receives progress messages.
    timeout : float
        Seconds to wait for the scheduler: after them, one CalibInputError.

    Yields
    ------
    callable
        ``map_reduce(function, items, merge, what)``.

    Examples
    --------
    >>> import operator
    >>> from distributed import LocalCluster
    >>> with LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cluster, Client(cluster) as client:
    ...     with on_cluster(client, say=lambda _: None) as map_reduce:
    ...         print(map_reduce(abs, [-1, 2, -3, 4, -5], operator.add))
    15
    """
    if isinstance(scheduler, Client):
        _check_workers(scheduler)
        yield _MapReduce(scheduler, say)
        return
    client = connect(str(scheduler), timeout)
    try:
        _check_workers(client)
        yield _MapReduce(client, say)
    finally:
        client.close()


def connect(address: str, timeout: float = CONNECT_TIMEOUT) -> Client:
    """A client of the scheduler at ``address``, or one CalibInputError when none answers within ``timeout`` s.

    The scheduler is first greeted on a connection of its own: a client that fails to start spends its
    close-down timeout too, and an address that answers in another protocol can make it fail anywhere.

    Examples
    --------
    >>> try:
    ...     connect("tcp://127.0.0.1:port")
    ... except CalibInputError as error:
    ...     print(str(error).split(" (")[0])
    scheduler 'tcp://127.0.0.1:port' is not an address
    """
    try:
        host, port = parse_host_port(parse_address(address)[1])
    except (ValueError, TypeError) as exc:
        raise CalibInputError(
            f"scheduler {address!r} is not an address ({exc}); give the one the scheduler prints, tcp://HOST:8786",
            cli_message=f"--scheduler {address} is not an address ({exc}); give the one dask scheduler prints, "
            "tcp://HOST:8786",
        ) from None
    quiet = logging.getLogger("distributed")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)  # each failed attempt would be logged before the one error
    try:
        asyncio.run(_greet(address, timeout))
        return Client(address, timeout=f"{timeout}s", set_as_default=False)
    except Exception as exc:  # noqa: BLE001 - whatever the far end did, the user gets one line
        if isinstance(exc, OSError | TimeoutError):
            reason = (str(exc).splitlines() or [type(exc).__name__])[0]
        else:  # e.g. a length prefix of another protocol read as a message's size
            reason = f"something answered, but not as a Dask scheduler: {type(exc).__name__}"
        raise CalibInputError(
            f"scheduler {address!r}: no Dask scheduler answered within {timeout:g} s ({reason}); start one "
            "(dask scheduler) and give its address, tcp://HOST:8786",
            cli_message=f"--scheduler {address}: no Dask scheduler answered at {host}:{port} within {timeout:g} s "
            f"({reason}); start one (dask scheduler) and give the address it prints, tcp://HOST:8786",
        ) from None
    finally:
        quiet.setLevel(level)


async def _greet(address: str, timeout: float) -> None:
    """Open and close a connection to the scheduler (Dask's handshake), retried until ``timeout``."""
    comm = await comm_connect(address, timeout=timeout)
    await comm.close()


def _check_workers(client: Client) -> None:
    """Refuse workers that run without this version of calib (they could not run the partitions)."""
    ours = importlib.metadata.version("calib-repro")
    found = client.run(importlib.metadata.version, "calib-repro", on_error="return")
    for worker, version in found.items():
        if version != ours:
            has = "does not have calib-repro" if isinstance(version, Exception) else f"has calib-repro {version}"
            raise CalibInputError(
                f"Dask worker {worker} {has}; the workers need calib-repro {ours}, as here: start them from this "
                "environment (pip install -e '.[dask]')"
            )


def _evaluated(function: Callable, item, topic: str):
    """``function(item)`` on a worker, announced on ``topic`` once done (the client counts the announcements)."""
    result = function(item)
    get_worker().log_event(topic, "done")
    return result


def _merge_tree(function: Callable, items: list, merge: Callable, topic: str) -> Delayed:
    """``function`` on every item, the results merged two neighbours at a time, in order, as one graph."""
    states = [delayed(_evaluated, pure=False)(function, item, topic) for item in items]
    while len(states) > 1:
        pairs = [states[i : i + 2] for i in range(0, len(states), 2)]
        states = [delayed(merge, pure=False)(*pair) if len(pair) == 2 else pair[0] for pair in pairs]
    return states[0]


class _MapReduce:
    """``function`` on every item on the workers, merged two neighbours at a time in order, on the workers."""

    def __init__(self, client: Client, say: Callable[[str], None]):
        self.client, self.say = client, say

    def __call__(self, function: Callable, items: list, merge: Callable, what: str = "partitions"):
        client = self.client
        # The whole tree goes to the scheduler as one graph and the client holds only its last merge: the
        # scheduler drops each state as soon as the merge that reads it is done (and computes it again from
        # its inputs if a later one is lost), without waiting for this process to let go of it, and orders
        # the tree so that each worker holds a few unmerged states, however many partitions there are. The
        # partitions announce themselves as done on a topic of their own, for the progress.
        phase = Phase(f"{what} on the cluster", len(items), self.say, unit="partitions")
        topic = f"calib-progress-{uuid.uuid4().hex}"
        client.subscribe_topic(topic, lambda _: phase.advance())
        final = client.compute(_merge_tree(function, items, merge, topic))
        try:
            return final.result()
        except KilledWorker as exc:
            raise CalibInputError(
                f"{what}: the {exc.allowed_failures + 1} Dask workers that ran task {exc.task} died each time, the "
                f"last {exc.last_worker.address}; give the workers more memory (a worker holds one partition's "
                "chunks per thread), or read their logs"
            ) from None
        finally:
            client.cancel([final])
            client.unsubscribe_topic(topic)
