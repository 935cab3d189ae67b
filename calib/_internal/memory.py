"""Large arrays given back to the system when freed, so that a long command's memory is what it holds.

glibc's malloc serves an allocation above its mmap threshold (128 KiB at first) with pages of its own
and unmaps them on free, but after such a block is freed it raises the threshold to that block's size
(up to 32 MiB), so later arrays of that size come from the heap, and a freed heap is kept, per thread.
A command that streams a large file through arrays of a few to tens of MiB, on two threads, then holds
the high-water mark of every phase at once. A fixed threshold (mallopt(3), M_MMAP_THRESHOLD) keeps
arrays above it mapped on their own, so their memory goes back when they are freed; below it, the
heap serves the many small temporaries without page faults; a large file evaluated in chunks then peaks
lower, and takes less time.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

M_MMAP_THRESHOLD = -3
THRESHOLD_BYTES = 4 << 20


def return_large_arrays_to_the_system() -> bool:
    """Fix glibc's mmap threshold at THRESHOLD_BYTES (nothing elsewhere, or when MALLOC_MMAP_THRESHOLD_
    is set: a value the user chose is kept). Returns whether it was set.

    Examples
    --------
    >>> return_large_arrays_to_the_system() in (True, False)
    True
    """
    if "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt if name else None
    except (OSError, AttributeError):
        return False
    return bool(mallopt and mallopt(M_MMAP_THRESHOLD, THRESHOLD_BYTES) == 1)
