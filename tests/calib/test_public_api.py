"""The public API: ``calib.__all__`` names what is public, each name resolves on first use, and
``import calib`` alone loads none of the library's modules."""

import subprocess
import sys

import pytest

import calib


def test_every_public_name_resolves_to_a_documented_object():
    assert calib.__all__ == sorted(set(calib.__all__)) and len(calib.__all__) >= 30
    for name in calib.__all__:
        value = getattr(calib, name)
        assert value.__name__ == name and value.__doc__, name


def test_an_unknown_name_points_to_the_public_list():
    with pytest.raises(AttributeError, match=r"calib.__all__"):
        calib.no_such_metric  # noqa: B018


def test_importing_calib_loads_nothing_until_a_name_is_used():
    code = (
        "import sys, calib; before = sorted(m for m in sys.modules if m.startswith('calib.')); "
        "calib.brier; after = 'calib.scoring.scores' in sys.modules; print(before, after)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] True"


def test_no_public_name_is_also_a_module_of_the_package():
    # Importing calib.<module> binds the module as an attribute of calib, which would hide a public
    # name of the same spelling from then on.
    import pkgutil

    modules = {info.name for info in pkgutil.iter_modules(calib.__path__)}
    assert not modules & set(calib.__all__)
