"""OMP_NUM_THREADS read as libgomp reads it (tfdash.omp_env): one count in ASCII digits, else set aside."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("value", ["²", "３", "1²"])
def test_a_digit_that_is_not_ascii_is_not_one_count(value):
    from tfdash.engine.threads import choose_threads
    from tfdash.omp_env import one_count

    assert not one_count(value)  # "²" had int() raise: a traceback before any command ran
    assert choose_threads(cores=2, env={"OMP_NUM_THREADS": value})[1].endswith(
        f"OMP_NUM_THREADS={value!r} is not one count")


def test_spaces_around_one_count_are_one_count():
    from tfdash.omp_env import one_count

    assert one_count(" 3 ") and not one_count("0") and not one_count("4,2") and not one_count("")


def test_a_superscript_digit_is_a_note_not_a_traceback(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "TFDASH_CONFIG_DIR": str(tmp_path / "cfg"),
           "TFDASH_CACHE_DIR": str(tmp_path / "cache"), "OMP_NUM_THREADS": "２²"}
    p = subprocess.run([sys.executable, "-m", "tfdash", "--headless", "--max-new-tokens", "2"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=REPO, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr and "libgomp" not in p.stderr
    assert "OMP_NUM_THREADS='２²' is not one count" in p.stderr
