"""Private helpers of the library (row-wise reductions, crash-safe files); not part of the API."""
