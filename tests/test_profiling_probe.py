"""The bandwidth probe on CPU (a host memcpy), its per-device cache, and the measured Target."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from conftest import run_tfdash

from tfdash.profiling import probe
from tfdash.profiling.analyze import analyze
from tfdash.profiling.targets import H200


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TFDASH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the cache is named whole, not from a home above it
    return tmp_path / "cache"


def test_measure_host_memcpy():
    r = probe.measure("cpu", nbytes=4 << 20, reps=3)
    assert r.method == "host memcpy" and r.reps == 3 and r.nbytes == 4 << 20
    assert r.bandwidth == pytest.approx(2 * r.nbytes / r.seconds)
    assert 1e8 < r.bandwidth < 1e13  # 0.1 GB/s .. 10 TB/s: a plausible host
    assert r.device.startswith("cpu:") and "host memcpy 2x4 MiB, median of 3" in r.source


def test_cache_is_keyed_by_device_and_reused(cache_dir, monkeypatch):
    first = probe.probe_bandwidth("cpu", nbytes=2 << 20, reps=2)
    data = json.loads((cache_dir / "bandwidth.json").read_text())
    assert list(data) == [probe.cpu_name()] and data[probe.cpu_name()]["bandwidth"] == first.bandwidth
    monkeypatch.setattr(probe, "measure", lambda *a, **k: pytest.fail("the cache should answer"))
    assert probe.probe_bandwidth("cpu") == first
    # other devices' entries are kept when this one is refreshed
    data["NVIDIA H200"] = {**data[probe.cpu_name()], "device": "NVIDIA H200", "bandwidth": 4.27e12}
    (cache_dir / "bandwidth.json").write_text(json.dumps(data))
    monkeypatch.undo()
    monkeypatch.setenv("TFDASH_CACHE_DIR", str(cache_dir))
    again = probe.probe_bandwidth("cpu", nbytes=2 << 20, reps=2, refresh=True)
    data = json.loads((cache_dir / "bandwidth.json").read_text())
    assert data["NVIDIA H200"]["bandwidth"] == 4.27e12 and data[probe.cpu_name()]["measured_at"] == again.measured_at


def test_corrupt_cache_is_ignored(cache_dir):
    cache_dir.mkdir(parents=True)
    (cache_dir / "bandwidth.json").write_text("{not json")
    assert probe.cached("cpu") is None
    (cache_dir / "bandwidth.json").write_text(json.dumps({probe.cpu_name(): {"bandwidth": "fast"}}))
    assert probe.cached("cpu") is None
    r = probe.probe_bandwidth("cpu", nbytes=1 << 20, reps=1)
    assert probe.cached("cpu") == r


def test_a_cache_nested_past_the_recursion_limit_is_ignored_as_a_corrupt_one_is(cache_dir, caplog):
    """A bandwidth.json of arrays in arrays stopped `--headless --profile` with a RecursionError traceback."""
    cache_dir.mkdir(parents=True)
    (cache_dir / "bandwidth.json").write_text("[" * 200_000 + "]" * 200_000)
    assert probe.cached("cpu") is None
    assert "(JSON nested too deeply)" in caplog.text
    r = probe.probe_bandwidth("cpu", nbytes=1 << 20, reps=1)
    assert probe.cached("cpu") == r  # written again whole


ENTRY_FIELDS = dict(bandwidth=1.2e10, nbytes=256 << 20, reps=5, seconds=0.04, method="host memcpy",
                    measured_at="2026-01-01T00:00:00Z", torch_version="2.13.0")


@pytest.mark.parametrize("field, value", [("measured_at", 5), ("method", 3), ("nbytes", "a"), ("bandwidth", True),
                                          ("bandwidth", float("inf")), ("seconds", "x"), ("reps", -1)])
def test_a_cache_entry_of_the_wrong_types_is_ignored_and_refused_as_a_target(cache_dir, tmp_path, field, value):
    """A hand-edited entry (a number for the date, a string count) stopped `--headless --profile` with a
    TypeError in its report; an infinite bandwidth priced every launch at 0 ns, `true` at 1 byte/s."""
    entry = {"device": probe.cpu_name(), **ENTRY_FIELDS, field: value}
    cache_dir.mkdir(parents=True)
    (cache_dir / "bandwidth.json").write_text(json.dumps({probe.cpu_name(): entry}))
    assert probe.cached("cpu") is None
    assert probe.cache_holds("probe: host memcpy 2x256 MiB, median of 5", 12.0) is False
    r = run_tfdash("analyze", "--model", "qwen3-tiny", "--target", str(cache_dir / "bandwidth.json"), timeout=60)
    assert r.rc == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"tfdash: error: target file {cache_dir / 'bandwidth.json'}: {probe.cpu_name()}: "
                               f"{field}: ")


def test_measured_target_feeds_the_analyzer(cache_dir):
    assert probe.default_target("cpu") is probe.CPU  # nothing cached yet
    assert probe.default_target("cuda") is H200
    r = probe.probe_bandwidth("cpu", nbytes=1 << 20, reps=1)
    t = probe.default_target("cpu")
    assert t.bandwidth == r.bandwidth and t.source == r.source and t.datasheet_bandwidth == 0.0
    assert t.name == "cpu-measured"
    gpu = probe.measured_target("cuda", result=probe.ProbeResult("NVIDIA H200", 4.27e12, 2 << 30, 5, 1.0,
                                                                 "cuda d2d copy", "2026-11-29T00:00:00Z", "2.11"))
    assert gpu.bandwidth == 4.27e12 and gpu.datasheet_bandwidth == 4.8e12 and gpu.peak_flops == H200.peak_flops
    from tfdash.engine import build_plan, preset

    plan = build_plan(preset("qwen3-1.7b"), capacity=2048)
    slow, fast = analyze(plan, H200, 1024), analyze(plan, gpu, 1024)
    assert fast.floor_ns == pytest.approx(slow.floor_ns * 4.8 / 4.27)


def _gpu_copy(gbps: float) -> probe.ProbeResult:
    return probe.ProbeResult(device="NVIDIA H100 80GB HBM3", bandwidth=gbps * 1e9, nbytes=2 << 30, reps=5,
                             seconds=2 * (2 << 30) / (gbps * 1e9), method="cuda d2d copy",
                             measured_at="2026-12-06T05:46:00Z", torch_version="2.11")


def test_a_gpu_copy_too_slow_to_be_the_memory_is_measured_again_and_never_cached(cache_dir, monkeypatch):
    """A GPU busy with another process once made the probe read 353 GB/s on an H100: cached, every
    later run there priced its steps against it (the roofline said 706 % of the ceiling). Under a
    quarter of the datasheet the probe measures again; the better figure is kept, and cached only if
    it is plausible; a second slow one is used for this run alone and says so."""
    figures = iter([_gpu_copy(353), _gpu_copy(3000)])
    monkeypatch.setattr(probe, "measure", lambda *a, **k: next(figures))
    assert probe.probe_bandwidth("cuda").bandwidth == 3000e9
    assert json.loads((cache_dir / "bandwidth.json").read_text())["NVIDIA H100 80GB HBM3"]["bandwidth"] == 3000e9

    (cache_dir / "bandwidth.json").unlink()
    figures = iter([_gpu_copy(353), _gpu_copy(340)])
    r = probe.probe_bandwidth("cuda")
    assert r.bandwidth == 353e9 and probe.NOT_CACHED in r.source
    assert not (cache_dir / "bandwidth.json").exists()


def test_a_cached_gpu_figure_too_slow_to_be_the_memory_is_not_reused(cache_dir, monkeypatch):
    cache_dir.mkdir(parents=True)
    (cache_dir / "bandwidth.json").write_text(json.dumps({"NVIDIA H100 80GB HBM3": _gpu_copy(353).to_dict()}))
    monkeypatch.setattr(probe, "device_name", lambda device="cpu": "NVIDIA H100 80GB HBM3")
    assert probe.cached("cuda") is None
    (cache_dir / "bandwidth.json").write_text(json.dumps({"NVIDIA H100 80GB HBM3": _gpu_copy(3000).to_dict()}))
    assert probe.cached("cuda").bandwidth == 3000e9


def test_a_step_over_its_ceiling_names_how_the_ceiling_is_measured_again(cache_dir):
    """Past OVER_CEILING_PCT a step cannot be that fast: the ceiling read low. A cached figure is
    measured again once its cache file is gone; one never cached, on the next run."""
    cached_source, busy_source = _gpu_copy(2000).source, probe.replace(_gpu_copy(353), method=(
        f"cuda d2d copy ({probe.NOT_CACHED})")).source
    for pct in (None, float("nan"), 47.7, 100.0, probe.OVER_CEILING_PCT):
        assert not probe.over_ceiling(pct) and probe.over_ceiling_note(pct, cached_source) == ""
    assert probe.over_ceiling(706.0)
    assert probe.over_ceiling_note(125.0, cached_source) == \
        f"over the ceiling: probe read low; delete {cache_dir / 'bandwidth.json'}"
    assert probe.over_ceiling_note(706.0, busy_source) == \
        "over the ceiling: probe read low (a busy GPU); run again on an idle one"
    assert probe.over_ceiling_note(125.0, "datasheet") == "over the ceiling: it reads below what the step achieved"


def test_a_figure_this_cache_does_not_hold_is_not_measured_again_by_deleting_it(cache_dir):
    """A step priced on a probe this host's cache file does not hold (another machine's, or one
    measured again since): deleting the file changes nothing, so the note names none. Whether the
    file holds it is asked of the figure (its probe's line and GB/s), never of a host's name."""
    low = _gpu_copy(2000)
    note = probe.over_ceiling_note(706.0, low.source, cached_here=False)
    assert note == "over the ceiling: its probe read low (not the figure cached here)"
    assert probe.over_ceiling_note(706.0, low.source, cached_here=True).endswith(str(cache_dir / "bandwidth.json"))
    assert probe.over_ceiling_note(47.7, low.source, cached_here=False) == ""
    assert not probe.cache_holds(low.source, 2000.0)  # no cache file
    cache_dir.mkdir()
    (cache_dir / "bandwidth.json").write_text(json.dumps({low.device: low.to_dict(), "junk": [1], "odd": {"x": 1}}))
    assert probe.cache_holds(low.source, 2000.0)
    assert not probe.cache_holds(low.source, 2100.0)  # the same probe's line, another figure
    assert not probe.cache_holds(_gpu_copy(2000).source.replace("H100", "H200"), 2000.0)
    assert not probe.cache_holds("datasheet", 2000.0) and not probe.cache_holds(low.source, None)


def test_the_cache_file_is_named_from_the_home_as_typed(tmp_path, monkeypatch):
    monkeypatch.delenv("TFDASH_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert probe.over_ceiling_note(706.0, _gpu_copy(2000).source).endswith(" delete ~/.cache/tfdash/bandwidth.json")


def test_a_step_under_its_ceiling_reads_no_cache_file(cache_dir, monkeypatch):
    """The roofline pane asks for the note on every refresh: whether the cache holds the figure (a
    read of its file) is asked only of a step over its ceiling."""
    def read(*_):
        raise AssertionError("the cache file was read")

    low = _gpu_copy(2000)
    monkeypatch.setattr(probe, "cache_holds", read)
    assert probe.ceiling_note(47.7, low.source, 2000.0) == "" and probe.ceiling_note(None, low.source, None) == ""
    monkeypatch.setattr(probe, "cache_holds", lambda source, gbps: False)
    assert probe.ceiling_note(706.0, low.source, 2000.0) == "over the ceiling: its probe read low (not the figure cached here)"


@pytest.mark.parametrize("where", ["file", "file/sub"])
def test_a_file_where_the_cache_folder_goes_is_one_line_said_once(tmp_path, where):
    """TFDASH_CACHE_DIR naming a file (or a folder under one): every read of the cache said "Not a
    directory" and the write "File exists"; now one line says what is wrong, once, and the run goes on."""
    (tmp_path / "file").write_text("not a folder")
    d = tmp_path / where
    r = run_tfdash("--headless", "--profile", "--model", "qwen3-tiny", "--device", "cpu", "--threads", "1",
                   "--max-new-tokens", "40", env={"TFDASH_CACHE_DIR": str(d)})
    assert r.rc == 0, r.stderr
    blocked = f"{d} is a file" if where == "file" else f"{d}: {tmp_path / 'file'} is a file"
    said = [ln for ln in r.stderr.splitlines() if "bandwidth" in ln and "probing" not in ln]
    assert said == [f"TFDASH_CACHE_DIR {blocked}, not a folder: the bandwidth probe is not cached"]
    probing = [ln for ln in r.stderr.splitlines() if "probing memory bandwidth" in ln]
    assert probing and not any("cached" in ln for ln in probing), probing  # it is not: never said so


def test_an_h100_is_priced_against_its_own_datasheet(monkeypatch, cache_dir):
    """A run on an H100 is held to the H100's memory, not the H200's: the base target, the measured
    one's datasheet figure and the probe's plausibility all follow the device's name."""
    from tfdash.profiling.targets import H100_NVL, H100_PCIE, H100_SXM, datasheet_for

    assert datasheet_for("NVIDIA H100 80GB HBM3") is H100_SXM
    assert datasheet_for("NVIDIA H100 PCIe") is H100_PCIE and datasheet_for("NVIDIA H100 NVL") is H100_NVL
    assert datasheet_for("NVIDIA H200") is H200 and datasheet_for(None) is H200
    monkeypatch.setattr(probe, "device_name", lambda device="cpu": "NVIDIA H100 80GB HBM3")
    assert probe.base_target("cuda") is H100_SXM and probe.default_target("cuda") is H100_SXM
    r = probe.ProbeResult("NVIDIA H100 80GB HBM3", 2.9e12, 2 << 30, 5, 1.0, "cuda d2d copy",
                          "2026-12-06T00:00:00Z", "2.11")
    t = probe.measured_target("cuda", result=r)
    assert t.name == "h100-sxm-measured" and t.datasheet_bandwidth == 3.35e12 and t.sms == 132
    # a PCIe card's copy at 1.0 TB/s is half its datasheet, not a busy GPU (a quarter of an H200's is 1.2)
    pcie = probe.ProbeResult("NVIDIA H100 PCIe", 1.0e12, 2 << 30, 5, 1.0, "cuda d2d copy", "2026-12-06T00:00:00Z", "2.11")
    assert probe.plausible(pcie)
    assert not probe.plausible(replace(pcie, device="NVIDIA H200"))
