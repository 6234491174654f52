"""Snapshot JSON: export -> load -> equal, the documented schema, and exact errors for bad files."""

from __future__ import annotations

import dataclasses
import json

import pytest
from profiling_support import rich_snapshot

from tfdash.errors import SnapshotError, TfdashError
from tfdash.profiling import snapshot as snapmod
from tfdash.profiling.export import (dumps_snapshot, load_snapshot, loads_snapshot, schema_doc, to_jsonable,
                                     write_snapshot)
from tfdash.profiling.snapshot import ProfileSnapshot, Roofline


def test_round_trip_is_equal(tmp_path):
    snap = rich_snapshot()
    path = write_snapshot(snap, tmp_path / "a" / "snap.json")
    back = load_snapshot(path)
    assert back == snap
    assert isinstance(back.kernels, tuple) and isinstance(back.kernels[1].device_kernels, tuple)
    assert back.nvml[0].values == (None, 3000.5)
    assert back.roofline.nvml_gbps is None and back.text == snap.text
    # and again: the written text is stable
    assert dumps_snapshot(back) == path.read_text(encoding="utf-8")


def test_schema_and_version_lead_the_file(tmp_path):
    raw = json.loads(dumps_snapshot(rich_snapshot()))
    assert list(raw)[:2] == ["schema", "version"]
    assert raw["schema"] == snapmod.SCHEMA and raw["version"] == snapmod.VERSION


def test_minimal_snapshot_round_trips():
    snap = ProfileSnapshot(meta=rich_snapshot().meta)
    assert loads_snapshot(dumps_snapshot(snap)) == snap


def test_schema_doc_names_every_field():
    doc = schema_doc()
    for cls in (snapmod.ProfileSnapshot, snapmod.RunMeta, snapmod.KernelRow, snapmod.Series, snapmod.Roofline,
                snapmod.TokenRecord, snapmod.KernelSpan):
        assert f"{cls.__name__}:" in doc
        for f in dataclasses.fields(cls):
            assert f"{f.name}:" in doc, (cls.__name__, f.name)


def test_snapshot_is_immutable():
    snap = rich_snapshot()
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.new_tokens = 5
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.kernels[0].measured_p50_ns = 1.0


def test_writer_refuses_nan(tmp_path):
    snap = dataclasses.replace(rich_snapshot(), roofline=dataclasses.replace(rich_snapshot().roofline,
                                                                             gap_ns=float("nan")))
    with pytest.raises(SnapshotError, match=r"roofline\.gap_ns is nan"):
        write_snapshot(snap, tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()


def _bad(mutate) -> str:
    raw = json.loads(dumps_snapshot(rich_snapshot()))
    mutate(raw)
    with pytest.raises(SnapshotError) as e:
        loads_snapshot(json.dumps(raw), "bad.json")
    msg = str(e.value)
    assert "\n" not in msg
    assert isinstance(e.value, TfdashError)
    return msg


@pytest.mark.parametrize("mutate, needle", [
    (lambda r: r["kernels"][1].__setitem__("measured_p50_ns", "fast"),
     "bad.json: kernels[1].measured_p50_ns: expected a number or null, got 'fast'"),
    (lambda r: r["kernels"][0].__setitem__("layer", 1.5), "kernels[0].layer: expected an integer or null"),
    (lambda r: r["step_ns"].__setitem__(2, True), "step_ns[2]: expected an integer, got True"),
    (lambda r: r.__setitem__("tokens", {"0": 1}), "tokens: expected an array"),
    (lambda r: r["meta"].pop("host"), "meta.host: missing"),
    (lambda r: r["meta"].__setitem__("colour", "red"), "meta: unknown field 'colour' in RunMeta"),
    (lambda r: r.__setitem__("extra", 1), "(top level): unknown field 'extra' in ProfileSnapshot"),
    (lambda r: r["roofline"].__setitem__("ctx_len", "1024"), "roofline.ctx_len: expected an integer"),
    (lambda r: r.__setitem__("roofline", []), "roofline: expected an object or null"),
    (lambda r: r["nvml"][0]["values"].append(1.0), "nvml[0]: series 'dram_gbps' has 2 times and 3 values"),
    (lambda r: r["timeline"][1].__setitem__("dur_ns", None), "timeline[1].dur_ns: expected an integer, got None"),
    (lambda r: r["kernels"][0].__setitem__("measured_p50_ns", 1e308),  # diff and open drew 1,300-character lines
     "bad.json: kernels[0].measured_p50_ns: 1e+308 ns is over an hour, not a measured time"),
    (lambda r: r["kernels"][0].__setitem__("measured_p90_ns", 3.7e12), "kernels[0].measured_p90_ns: 3.7e+12 ns is over"),
    (lambda r: r["step_ns"].__setitem__(1, 10 ** 16), "step_ns[1]: 1e+16 ns is over an hour"),
    (lambda r: r["roofline"].__setitem__("measured_step_ns", 1e300), "roofline.measured_step_ns: 1e+300 ns is over"),
    (lambda r: r.__setitem__("unavailable", ["nvml"]), "unavailable: expected an object"),
    (lambda r: r.__setitem__("new_tokens", 2 ** 70), "new_tokens: integer"),
    (lambda r: r.__setitem__("version", snapmod.VERSION + 1),
     f"snapshot version {snapmod.VERSION + 1} is newer than this tfdash reads (version {snapmod.VERSION})"),
    (lambda r: r.__setitem__("version", "1"), "version: expected an integer, got '1'"),
    (lambda r: r.pop("version"), "bad.json: no 'version' field"),  # it said "expected an integer, got None"
    (lambda r: r.__setitem__("version", 0), "version 0 is not a snapshot version"),
    (lambda r: r.__setitem__("schema", "other"), "not a tfdash snapshot (schema is 'other'"),
    (lambda r: r.pop("schema"), "not a tfdash snapshot (no 'schema' field"),
])
def test_loader_names_the_problem(mutate, needle):
    assert needle in _bad(mutate)


@pytest.mark.parametrize("text, needle", [
    ("", "not valid JSON"),
    ("[1, 2]", "expected a JSON object, got [1, 2]"),
    ("null", "expected a JSON object, got null"),  # it said NoneType
    ('{"schema": "tfdash.snapshot", "version": 1, "step_ns": [NaN]}', "NaN is not a JSON number"),
    ('{"schema": "tfdash.snapshot", "version": 1, "wall_ns": ' + "9" * 5000 + "}", "not valid JSON"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
])
def test_loader_rejects_bad_text(text, needle):
    with pytest.raises(SnapshotError, match="snap.json: ") as e:
        loads_snapshot(text, "snap.json")
    assert needle in str(e.value)


def test_loader_file_errors(tmp_path):
    with pytest.raises(SnapshotError, match="no such snapshot file"):
        load_snapshot(tmp_path / "missing.json")
    with pytest.raises(SnapshotError, match="is a directory"):
        load_snapshot(tmp_path)
    p = tmp_path / "bin.json"
    p.write_bytes(b'{"schema": "\xff\xfe"}')
    with pytest.raises(SnapshotError, match="not UTF-8"):
        load_snapshot(p)
    good = write_snapshot(rich_snapshot(), tmp_path / "ok.json")
    good.write_text(good.read_text()[:-40])
    with pytest.raises(SnapshotError, match="ok.json: not valid JSON"):
        load_snapshot(good)


def test_huge_array_is_refused(tmp_path):
    from tfdash.profiling import export

    raw = to_jsonable(rich_snapshot())
    raw["step_ns"] = [0] * (export.MAX_ITEMS + 1)
    p = tmp_path / "huge.json"
    p.write_text(json.dumps(raw))
    with pytest.raises(SnapshotError, match=r"step_ns: 2000001 items, more than the limit"):
        load_snapshot(p)


def test_pct_properties_are_safe_without_a_datasheet():
    r = dataclasses.replace(rich_snapshot().roofline, datasheet_gbps=0.0, nvml_gbps=3000.0)
    assert r.pct_datasheet != r.pct_datasheet  # nan, computed, never stored
    assert r.nvml_ratio == pytest.approx(3000.0 / 2187.5)
    assert isinstance(r, Roofline)


def test_a_gzip_compressed_snapshot_loads(tmp_path):
    """benchmarks/ keeps its large snapshots as .json.gz: `tfdash open` (diff, --baseline) said
    "not UTF-8 text (byte 1)" of them. They load as the JSON inside; a cut one says so in a line."""
    import gzip

    snap = rich_snapshot()
    path = tmp_path / "snap.json.gz"
    path.write_bytes(gzip.compress(dumps_snapshot(snap).encode()))
    assert load_snapshot(path) == snap
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(SnapshotError, match=r"snap\.json\.gz: gzip-compressed, but cannot be read") as e:
        load_snapshot(path)
    assert "\n" not in str(e.value)


def test_a_binary_file_is_said_to_be_no_snapshot_naming_the_byte_and_its_offset(tmp_path):
    """`tfdash open` of a binary file said "garbage.json: not UTF-8 text (byte 0)", which reads as a
    byte whose value is 0; it names the byte and where it is, as --prompt's own check does."""
    path = tmp_path / "garbage.json"
    path.write_bytes(b'{"a": \xff\xfe}')
    with pytest.raises(SnapshotError) as e:
        load_snapshot(path)
    assert str(e.value) == f"{path}: not a snapshot: byte 0xff at offset 6 is not UTF-8 text"
