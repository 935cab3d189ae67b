"""Test ordering for pytest-xdist (``python -m pytest -n auto``).

The end-to-end tests run in groups (``pytest.mark.xdist_group``), each in one worker, one test after the
other, for minutes. Collected first, the groups start at once and the short tests fill the other workers
beside them; collected in path order, they would start last and run alone.
"""

from __future__ import annotations


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: item.get_closest_marker("xdist_group") is None)
