"""scripts/h200_check.sh is what a device session runs blind: a mode that names a bench backend
the bench no longer knows fails minutes into a paid call, so every `tilelang-*` name in it must be
one `tfdash bench` accepts, the script must parse, the modes it lists must be the ones it runs, and
an unknown mode must stop at once with one line."""

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


def test_the_modes_it_lists_are_the_modes_it_runs():
    text = SCRIPT.read_text()
    listed = set(re.search(r'^MODES=" ([a-z0-9 ]+) "$', text, re.M).group(1).split())
    run = set(re.findall(r'"\$what" = ([a-z0-9]+) \]', text))
    assert "final" in run and listed == run


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_an_unknown_mode_is_one_line_before_any_work(tmp_path):
    done = subprocess.run(["bash", str(SCRIPT), "nosuch"], capture_output=True, text=True, cwd=tmp_path,
                          env={"PATH": "/usr/bin:/bin", "OUT": str(tmp_path / "out")})
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("h200_check.sh: unknown mode 'nosuch' (modes: tests ")
    assert not (tmp_path / "out").exists()  # it stopped before making $OUT
