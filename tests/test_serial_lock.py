"""tests/serial_lock.py: under pytest-xdist a `serial` test runs with no other test beside it,
waits for the tests running when it asks, and holds back the tests asked for after it."""

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from conftest import REPO
from serial_lock import turn


def _until(cond, what: str, timeout: float = 20) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, f"waited {timeout} s for {what}"
        time.sleep(0.01)


def test_a_serial_turn_waits_for_the_shared_one_and_holds_back_the_next(tmp_path):
    """R1 runs; W (serial) asks, and waits; R2 asks after W, and waits too, though only a shared
    lock is held (flock alone would let R2 in, and a worker that starts test after test would
    keep W waiting for ever); R1 ends, W runs alone; W ends, R2 runs."""
    events: list[str] = []
    release = {name: threading.Event() for name in ("R1", "W", "R2")}

    def test(name: str, serial: bool) -> None:
        with turn(str(tmp_path), serial):
            events.append(f"{name} in")
            release[name].wait(30)
            events.append(f"{name} out")

    threads = {}

    def start(name: str, serial: bool = False) -> None:
        threads[name] = threading.Thread(target=test, args=(name, serial), daemon=True)
        threads[name].start()

    start("R1")
    _until(lambda: "R1 in" in events, "R1")
    start("W", serial=True)
    time.sleep(0.3)
    assert events == ["R1 in"]  # W waits for the test running
    start("R2")
    time.sleep(0.3)
    assert events == ["R1 in"]  # R2 waits behind W
    release["R1"].set()
    _until(lambda: "W in" in events, "W after R1")
    time.sleep(0.3)
    assert events == ["R1 in", "R1 out", "W in"]  # W alone
    release["W"].set()
    _until(lambda: "R2 in" in events, "R2 after W")
    release["R2"].set()
    for t in threads.values():
        t.join(10)
    assert events == ["R1 in", "R1 out", "W in", "W out", "R2 in", "R2 out"]


_CHILD_TESTS = '''
import json, os, time
import pytest

def _record(name):
    t0 = time.monotonic()
    time.sleep(0.4)
    with open(os.path.join(os.environ["SPANS"], name), "w") as f:
        json.dump({"start": t0, "end": time.monotonic(), "worker": os.environ.get("PYTEST_XDIST_WORKER")}, f)

@pytest.mark.parametrize("i", range(4))
def test_before(i):
    _record(f"before{i}")

@pytest.mark.serial
@pytest.mark.xdist_group("serial")  # as conftest.py groups them
@pytest.mark.parametrize("i", range(2))
def test_serial(i):
    _record(f"serial{i}")

@pytest.mark.parametrize("i", range(4))
def test_after(i):
    _record(f"after{i}")
'''


@pytest.mark.slow  # a pytest -n 2 of its own: ~5 s
def test_under_xdist_no_test_runs_beside_a_serial_one(tmp_path):
    """Ten tests that sleep 0.4 s in `pytest -n 2 --dist loadgroup`, two of them `serial`: the others
    overlap each other (the run is parallel), none overlaps a serial one, and the two serial ones
    run back to back on one worker with no other test between them."""
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    serial: alone\n")
    (tmp_path / "conftest.py").write_text(
        "from serial_lock import pytest_configure_node, pytest_runtest_protocol, pytest_unconfigure  # noqa\n")
    (tmp_path / "test_child.py").write_text(_CHILD_TESTS)
    spans = tmp_path / "spans"
    spans.mkdir()
    env = {**os.environ, "SPANS": str(spans),
           "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-q", "-p", "no:cacheprovider",
                          "test_child.py"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    got = {p.name: json.loads(p.read_text()) for p in spans.iterdir()}
    assert len(got) == 10 and {s["worker"] for s in got.values()} == {"gw0", "gw1"}, got

    def overlap(a, b):
        return a["start"] < b["end"] and b["start"] < a["end"]

    others = [n for n in got if not n.startswith("serial")]
    assert any(overlap(got[a], got[b]) for a in others for b in others if a < b), got  # in parallel
    for s in ("serial0", "serial1"):
        assert not [n for n in got if n != s and overlap(got[s], got[n])], got
    first, second = sorted((got["serial0"], got["serial1"]), key=lambda s: s["start"])
    assert first["worker"] == second["worker"], got
    assert not [n for n in others if overlap(got[n], {"start": first["end"], "end": second["start"]})], got



def test_a_kernel_build_takes_a_shared_turn(tmp_path, monkeypatch):
    """A build job (tests/kernel_builds.py, in its pool's worker) waits while a serial test runs."""
    import kernel_builds

    monkeypatch.setattr(kernel_builds, "_LOCK", [str(tmp_path)])
    events: list[str] = []

    def build() -> None:
        with kernel_builds._turn():
            events.append("built")

    with turn(str(tmp_path), serial=True):
        t = threading.Thread(target=build, daemon=True)
        t.start()
        time.sleep(0.3)
        assert events == []  # held back by the serial test
    t.join(10)
    assert events == ["built"]
