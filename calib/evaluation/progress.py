"""Progress of a long phase of an evaluation (reading, cross-validated fits, partitions on a cluster),
told through a ``say(message)`` callback at a bounded rate, with the time left when the total is known."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

# A long phase reports its progress at most this often (seconds), and then at most every tenth of the
# time elapsed (a phase of minutes says so a few dozen times, not hundreds).
PROGRESS_EVERY = 2.0


class Phase:
    """Progress of a phase of ``total`` steps (None: unknown): steps done, elapsed time and, when the
    total is known, the time left at the rate so far, at most every PROGRESS_EVERY seconds.

    Parameters
    ----------
    what : str
        The phase's name, the start of each message.
    total : int or None
        Steps in the phase, when known or estimated; an estimate that falls short stops giving the time left.
    say : callable
        Receives the messages.
    unit : str
        What a step is ("rows", "partitions"), said after the count.

    Examples
    --------
    >>> phase = Phase("fits", 2, print)
    >>> phase.advance(); phase.advance()  # doctest: +ELLIPSIS
    fits 2/2 (... s)
    """

    def __init__(self, what: str, total: int | None, say: Callable[[str], None], unit: str = ""):
        self.what, self.total, self.say, self.unit, self.done = what, total, say, unit, 0
        self.start = self.last = time.perf_counter()
        self._lock = threading.Lock()  # the calibrators' fits advance it from their threads

    def advance(self, steps: int = 1) -> None:
        """Count ``steps`` more steps done, and say so when it is time to."""
        with self._lock:
            self._advance(steps)

    def _advance(self, steps: int) -> None:
        self.done += steps
        if self.total is not None and self.done > self.total:  # an estimate that fell short: no time left
            self.total = None
        now = time.perf_counter()
        finished = self.total is not None and self.done >= self.total
        if not finished and now - self.last < max(PROGRESS_EVERY, 0.1 * (now - self.start)):
            return
        self.last, elapsed = now, now - self.start
        counted = f"{self.done}" + (f"/{self.total}" if self.total else "") + (f" {self.unit}" if self.unit else "")
        if finished:
            self.say(f"{self.what} {counted} ({elapsed:.1f} s)")
        elif self.total:
            left = elapsed / self.done * (self.total - self.done)
            self.say(f"{self.what} {counted} ({elapsed:.0f} s, about {left:.0f} s left)")
        else:
            self.say(f"{self.what} {counted} ({elapsed:.0f} s)")
