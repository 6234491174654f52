"""scripts/h200_check.sh is what a device session runs blind: a mode that names a bench backend
the bench no longer knows fails minutes into a paid call, so every `tilelang-*` name in it must be
one `tfdash bench` accepts, and the script must parse."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tfdash.profiling.bench import BACKENDS

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "h200_check.sh"


def test_every_backend_the_device_script_names_is_one_the_bench_knows():
    named = set(re.findall(r"\btilelang-[a-z0-9]+\b", SCRIPT.read_text()))
    assert "tilelang-graph" in named  # the search finds what it is looking for
    assert named - set(BACKENDS) == set()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_device_script_parses():
    done = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
