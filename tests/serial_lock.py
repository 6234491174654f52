"""Tests marked `serial` run with no other test beside them when pytest-xdist runs the suite in
several workers (`pytest -n 2`): they assert on wall-clock time (a latency, a rate, a p99 against
a p50), which a test on the other core can break. conftest.py imports the hooks below.

Each worker takes a lock around each test's whole protocol (setup, call, teardown, so a module's
or the session's fixtures too): shared for a test, exclusive for a `serial` one. The locks are
files in a folder the controller makes for the run (so two runs never wait on each other) and
hands each worker in its workerinput; without xdist nothing is locked.

flock alone lets a shared lock in whenever no lock is held, so a worker that ends one test and
starts the next at once can keep an exclusive request waiting for ever. A gate fixes that: every
test takes the gate before its lock, a shared one lets go of the gate at once, and a serial one
holds it until it ends, so once a serial test waits for the gate's holder to finish, the other
workers queue at the gate. The gate is only ever asked for with no lock held, so a serial test
waits for the tests running now and then runs: no cycle, no deadlock.

conftest.py puts the serial tests in one xdist_group, so under `--dist loadgroup` one worker runs
them back to back, and it keeps its exclusive lock from one to the next: the other workers wait
for them once, not once each (a wait lasts what the test running there has left).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from contextlib import contextmanager

import pytest

KEY = "tfdash_serial_locks"  # the workerinput key: the run's lock folder
FREE = pytest.StashKey[bool]()  # item.stash[FREE] = True: the test takes no turn (its work takes its own)


def folder(config) -> str | None:
    """The run's lock folder in an xdist worker; None without xdist (nothing is locked)."""
    return getattr(config, "workerinput", {}).get(KEY)


def take(folder: str, serial: bool) -> tuple[int, int]:
    """Take the run's lock in `folder` for a test: exclusive (no other test running) when `serial`,
    else shared with the other workers' tests. Returns what `give` lets go of."""
    gate = os.open(os.path.join(folder, "gate"), os.O_RDWR | os.O_CREAT, 0o600)
    tests = os.open(os.path.join(folder, "tests"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(gate, fcntl.LOCK_EX)
        fcntl.flock(tests, fcntl.LOCK_EX if serial else fcntl.LOCK_SH)
    except BaseException:
        give((gate, tests))
        raise
    if not serial:
        fcntl.flock(gate, fcntl.LOCK_UN)
    return gate, tests


def give(held: tuple[int, int]) -> None:
    for fd in reversed(held):
        os.close(fd)  # closing lets go of its lock


@contextmanager
def turn(folder: str, serial: bool):
    held = take(folder, serial)
    try:
        yield
    finally:
        give(held)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """(controller, xdist) One lock folder for the run, handed to each worker."""
    config = node.config
    if getattr(config, "_serial_locks", None) is None:
        config._serial_locks = tempfile.mkdtemp(prefix="tfdash-serial-")
    node.workerinput[KEY] = config._serial_locks


def pytest_unconfigure(config):
    folder = getattr(config, "_serial_locks", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


def _serial(item) -> bool:
    return item is not None and item.get_closest_marker("serial") is not None


_HELD: list[tuple[int, int]] = []  # this worker's lock, kept from a serial test to a serial next one


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    where = folder(item.config)
    if not where or item.stash.get(FREE, False):
        return (yield)
    if not _HELD:
        _HELD.append(take(where, _serial(item)))
    try:
        return (yield)
    finally:
        if not (_serial(item) and _serial(nextitem)):  # serial tests back to back keep the other workers out
            give(_HELD.pop())
