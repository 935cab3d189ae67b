"""Timing, peak memory and result rows for the side-by-side benchmark (``benchmarks/run.py``).

A case is one operation at one size: a calib call and the peers that compute the same thing on the
same inputs. Each call is first run once untimed under tracemalloc (its peak traced memory; numpy
registers its buffers there) and then timed with ``time.perf_counter`` over up to ``repeats`` calls,
stopping early once ``budget`` seconds are spent; the median is reported. torch allocates outside
tracemalloc, so torch-based peers get no traced (and no untimed) call and their memory is n/a.
"""

from __future__ import annotations

import importlib
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

NOT_AVAILABLE = "n/a"


@dataclass(frozen=True)
class Measurement:
    """Median wall time over ``repeats`` timed calls, traced peak memory (None: not traced), last result."""

    seconds: float
    repeats: int
    peak_mb: float | None
    value: Any


@dataclass(frozen=True)
class Peer:
    """A peer library's way of computing a case; ``run=None`` means it cannot (``note`` says why).

    ``calib`` is calib's call with this peer's conventions when it differs from the case's call.
    ``distance(calib_value, peer_value)`` measures the disagreement in the unit of ``tolerance``.
    """

    name: str
    run: Callable[[], Any] | None = None
    calib: Callable[[], Any] | None = None
    distance: Callable[[Any, Any], float] | None = None
    tolerance: float = 0.0
    unit: str = "abs"
    torch: bool = False
    note: str = ""


@dataclass(frozen=True)
class Case:
    """One operation at size ``n``: ``setup()`` makes the inputs and returns (calib call or None, peers)."""

    operation: str
    n: int
    setup: Callable[[], tuple[Callable[[], Any] | None, list[Peer]]]
    note: str = ""


def optional_module(name: str) -> ModuleType | None:
    """The module ``name``, or None when it is not installed (its peer rows then say so)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def traced_peak_mb(fn: Callable[[], Any]) -> tuple[float, Any]:
    """(peak memory traced by tracemalloc during ``fn()`` in MB, its result)."""
    tracemalloc.start()
    try:
        value = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 2**20, value


def measure(fn: Callable[[], Any], *, repeats: int, budget: float, traced: bool = True) -> Measurement:
    """Traced untimed call (if ``traced``), then timed calls until ``repeats`` or ``budget`` seconds."""
    peak_mb, value = traced_peak_mb(fn) if traced else (None, None)
    times: list[float] = []
    while len(times) < repeats and (not times or sum(times) < budget):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return Measurement(float(np.median(times)), len(times), peak_mb, value)


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _memory(measurement: Measurement | None) -> float | str:
    if measurement is None or measurement.peak_mb is None:
        return NOT_AVAILABLE
    return float(f"{measurement.peak_mb:.3g}")


def run_case(case: Case, *, repeats: int, budget: float) -> Iterator[dict]:
    """The rows of ``case``: one per peer, each with calib's measurement beside the peer's."""
    calib_call, peers = case.setup()
    shared = None if calib_call is None else _measure_calib(case, calib_call, repeats, budget)
    for peer in peers:
        ours = shared if peer.calib is None else _measure_calib(case, peer.calib, repeats, budget)
        theirs = None
        if peer.run is not None:
            theirs = measure(peer.run, repeats=repeats, budget=budget, traced=not peer.torch)
            progress(f"{case.operation}, n={case.n}: {peer.name} {theirs.seconds:.4g} s")
        yield _row(case, ours, peer, theirs)


def _measure_calib(case: Case, call: Callable[[], Any], repeats: int, budget: float) -> Measurement:
    measurement = measure(call, repeats=repeats, budget=budget)
    progress(f"{case.operation}, n={case.n}: calib {measurement.seconds:.4g} s")
    return measurement


def _row(case: Case, ours: Measurement | None, peer: Peer, theirs: Measurement | None) -> dict:
    difference, agree = np.nan, NOT_AVAILABLE
    if ours is not None and theirs is not None and peer.distance is not None:
        difference = float(peer.distance(ours.value, theirs.value))
        agree = bool(difference <= peer.tolerance)
    calib_seconds = ours.seconds if ours is not None else np.nan
    peer_seconds = theirs.seconds if theirs is not None else np.nan
    return {
        "operation": case.operation,
        "n": case.n,
        "calib (s)": calib_seconds,
        "peer": peer.name,
        "peer (s)": peer_seconds,
        "speedup": peer_seconds / calib_seconds,
        "calib MB": _memory(ours),
        "peer MB": NOT_AVAILABLE if peer.torch else _memory(theirs),
        "difference": difference,
        "tolerance": f"{peer.tolerance:g} {peer.unit}" if peer.distance is not None else NOT_AVAILABLE,
        "agree": agree,
        "repeats": f"{ours.repeats if ours else 0}/{theirs.repeats if theirs else 0}",
        "note": "; ".join(text for text in (case.note, peer.note) if text),
    }
