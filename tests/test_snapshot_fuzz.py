"""The loader, fuzzed: truncated files, wrong types anywhere, future versions, random bytes, huge
arrays. It returns a ProfileSnapshot or raises SnapshotError with one line; nothing else escapes."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiling_support import rich_snapshot

from tfdash.errors import SnapshotError
from tfdash.profiling import export
from tfdash.profiling.export import dumps_snapshot, load_snapshot, loads_snapshot, to_jsonable
from tfdash.profiling.snapshot import VERSION, ProfileSnapshot

GOOD = dumps_snapshot(rich_snapshot())
RAW = json.loads(GOOD)
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**80, 2**80) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=10)


def outcome(text: str):
    """Load; only a snapshot or a one-line SnapshotError may come out."""
    try:
        snap = loads_snapshot(text, "fuzz.json")
    except SnapshotError as e:
        msg = str(e)
        assert msg.startswith("fuzz.json: ") and "\n" not in msg, msg
        return e
    assert isinstance(snap, ProfileSnapshot)
    return snap


def _paths(node, prefix=()):
    """Every (path) into a JSON tree, containers included."""
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


PATHS = [p for p in _paths(RAW) if p]


def _set(tree, path, value):
    tree = json.loads(json.dumps(tree))
    node = tree
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return tree


@FUZZ
@given(st.integers(0, len(GOOD)))
def test_truncated_files(cut):
    out = outcome(GOOD[:cut])
    if cut < len(GOOD.rstrip()):
        assert isinstance(out, SnapshotError)


@FUZZ
@given(st.sampled_from(PATHS), json_values)
def test_any_field_any_value(path, value):
    outcome(json.dumps(_set(RAW, path, value)))


@FUZZ
@given(st.sampled_from(PATHS))
def test_removed_fields(path):
    tree = json.loads(GOOD)
    node = tree
    for k in path[:-1]:
        node = node[k]
    del node[path[-1]]
    outcome(json.dumps(tree))


@FUZZ
@given(st.integers(VERSION + 1, 2**70))
def test_future_versions(version):
    out = outcome(json.dumps({**RAW, "version": version}))
    assert isinstance(out, SnapshotError) and "newer than this tfdash reads" in str(out)


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes(tmp_path_factory, data):
    p = tmp_path_factory.mktemp("fz") / "f.json"
    p.write_bytes(data)
    with pytest.raises(SnapshotError):
        load_snapshot(p)


@FUZZ
@given(st.sampled_from(["step_ns", "tokens", "kernels", "nvml", "timeline", "marginal"]),
       st.integers(0, 60), json_values)
def test_huge_arrays(monkeypatch_limit, field, extra, item):
    """Arrays past the limit are refused by size; below it each item is still type-checked."""
    n = export.MAX_ITEMS + extra - 30
    out = outcome(json.dumps({**RAW, field: [item] * n}))
    if n > export.MAX_ITEMS:
        assert isinstance(out, SnapshotError) and "more than the limit" in str(out)


@pytest.fixture(scope="module")
def monkeypatch_limit():
    old = export.MAX_ITEMS
    export.MAX_ITEMS = 40  # the real limit is 2e6 (test_snapshot checks it); keep the fuzz fast
    yield
    export.MAX_ITEMS = old


def test_round_trip_after_fuzz_helpers():
    # the helpers above do not alter the reference document
    assert loads_snapshot(json.dumps(RAW)) == rich_snapshot()
    assert to_jsonable(rich_snapshot()) == RAW
