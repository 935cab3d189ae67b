"""The code stamp is what ``sha256sum`` writes, and the workflow's first job runs without heavy imports."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.code_stamp import main, write_code_stamp

ROOT = Path(__file__).resolve().parents[2]


def test_the_stamp_checks_with_sha256sum_and_names_every_file_sorted(tmp_path):
    files = [ROOT / "pipeline" / "io.py", ROOT / "calib" / "__init__.py", ROOT / "pipeline" / "code_stamp.py"]
    out = write_code_stamp(files, tmp_path / "code.sha256")
    lines = out.read_text().splitlines()
    assert [line.split("  ", 1)[1] for line in lines] == sorted(map(str, files))
    # An implementation of its own checks every line: coreutils' sha256sum (Linux) or Perl's shasum (macOS).
    checker = ["sha256sum"] if shutil.which("sha256sum") else ["shasum", "--algorithm", "256"]
    assert shutil.which(checker[0]), "neither sha256sum nor shasum is installed: nothing independent to check with"
    check = subprocess.run([*checker, "--check", "--strict", out], capture_output=True, text=True)
    assert check.returncode == 0 and check.stdout.count(": OK") == len(files), check.stdout + check.stderr


def test_a_changed_file_changes_its_line_only(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("x = 1\n")
    b.write_text("y = 2\n")
    before = write_code_stamp([a, b], tmp_path / "s1").read_text().splitlines()
    a.write_text("x = 2\n")
    after = write_code_stamp([a, b], tmp_path / "s2").read_text().splitlines()
    assert before[0] != after[0] and before[1] == after[1]


def test_the_command_loads_neither_numpy_nor_the_config_stack(tmp_path):
    probe = (
        "import sys; from pipeline.code_stamp import main; main([sys.argv[1], 'calib/__init__.py']);"
        "print(sorted(m for m in ('numpy', 'pandas', 'omegaconf', 'hydra') if m in sys.modules))"
    )
    run = subprocess.run([sys.executable, "-c", probe, tmp_path / "s"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[-1] == "[]"


def test_the_command_without_files_says_how_to_call_it():
    with pytest.raises(SystemExit, match="usage: python -m pipeline.code_stamp <out> <file>"):
        main(["only-out"])
