"""`tfdash bench` past its checks, on a stand-in device: a stop signal between its rounds keeps
what it measured, and a peer that cannot be built is skipped with a line, the others measured.

bench needs a CUDA device, so here the device is a stand-in: torch says CUDA is there, the engine
is the CPU's torch reference (its `capture` a no-op) and the copy ceiling a fixed figure. The
signals are real ones, sent to this process while the second round's generation runs.
"""

from __future__ import annotations

import json
import os
import signal
import sys

import pytest
import torch

import tfdash.engine as engine_mod
import tfdash.engine.decode as decode_mod
import tfdash.profiling.probe as probe_mod
from tfdash.cli import main

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals")


@pytest.fixture
def cpu_as_cuda(monkeypatch, tmp_path):
    """bench's device calls answered on the CPU; returns the generations started, in order."""
    real_load = engine_mod.load_engine

    def load(**kw):
        eng = real_load(**{**kw, "device": "cpu", "backend": "torch-eager", "dtype": "float32", "threads": 1})
        eng.runtime.capture = lambda ids=None: None  # an eager runtime has no graph to capture
        return eng

    fixed = probe_mod.ProbeResult("cpu:test", 12.5e9, 256 << 20, 5, 0.04, "host memcpy",
                                  "2026-01-01T00:00:00Z", torch.__version__)
    monkeypatch.setenv("TFDASH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "stand-in", raising=False)
    monkeypatch.setattr(engine_mod, "load_engine", load)
    monkeypatch.setattr(probe_mod, "probe_bandwidth", lambda *a, **k: fixed)
    started: list = []
    return started


def _signal_in_generation(monkeypatch, started, which: int, sig: int):
    """Generation number `which` (counting the warm-up's) sends `sig` to this process at its 4th token."""
    real = decode_mod.Generation

    class Signalled(real):
        def __iter__(self):
            started.append(self)
            for i, ev in enumerate(super().__iter__()):
                if len(started) == which and i == 3:
                    os.kill(os.getpid(), sig)
                yield ev

    monkeypatch.setattr(decode_mod, "Generation", Signalled)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_signal_between_rounds_keeps_the_rounds_measured(cpu_as_cuda, monkeypatch, tmp_path, capsys, sig):
    """Ctrl+C in the second round of three lost the first: one line "interrupted", no table, no --json."""
    _signal_in_generation(monkeypatch, cpu_as_cuda, which=3, sig=sig)  # warm-up, round 0, then round 1
    out = tmp_path / "bench.json"
    rc = main(["bench", "--model", "qwen3-tiny", "--backends", "torch-graph", "--max-new-tokens", "16",
               "--rounds", "3", "--json", str(out)])
    cap = capsys.readouterr()
    assert rc == 128 + sig
    assert "Traceback" not in cap.err
    name = signal.Signals(sig).name
    assert f"tfdash: interrupted ({name}) in round 1; the table covers what was measured before it" in cap.err
    table = cap.out.splitlines()
    assert table[0].startswith("tfdash bench · qwen3-tiny") and table[2].startswith("torch-graph")
    assert table[-1] == f"interrupted ({name}): 1 backend round of 3 measured"
    report = json.loads(out.read_text())
    assert report["interrupted"] is True
    assert [(r["round"], r["backend"]) for r in report["rounds"]] == [(0, "torch-graph")]
    assert report["summary"]["torch-graph"]["tok_per_s_median"] > 0
    assert f"# wrote {out}" in cap.err


def test_an_uninterrupted_bench_says_nothing_of_interruption(cpu_as_cuda, tmp_path, capsys):
    out = tmp_path / "bench.json"
    rc = main(["bench", "--model", "qwen3-tiny", "--backends", "torch-graph", "--max-new-tokens", "8",
               "--rounds", "2", "--json", str(out)])
    cap = capsys.readouterr()
    assert rc == 0 and "interrupted (" not in cap.out + cap.err
    report = json.loads(out.read_text())
    assert "interrupted" not in report and len(report["rounds"]) == 2


@pytest.mark.parametrize("seed, recorded", [(None, 0), ("7", 7)])
def test_the_json_records_the_random_weights_seed(cpu_as_cuda, tmp_path, capsys, seed, recorded):
    """The --json of a run on random weights recorded no seed: without --seed in its command, which
    weights it ran on could not be told; it records the seed used, the default's too."""
    out = tmp_path / "bench.json"
    rc = main(["bench", "--model", "qwen3-tiny", "--backends", "torch-graph", "--max-new-tokens", "4",
               "--rounds", "1", "--json", str(out), *(["--seed", seed] if seed else [])])
    assert rc == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    assert report["checkpoint"] == "random" and report["seed"] == recorded, report


def test_the_json_of_a_checkpoint_records_no_seed(cpu_as_cuda, ckpt_factory, tmp_path, capsys):
    out = tmp_path / "bench.json"
    ckpt = ckpt_factory(tied=True).path
    rc = main(["bench", "--ckpt", str(ckpt), "--backends", "torch-graph", "--prompt", "w5 w6", "--max-new-tokens", "4",
               "--rounds", "1", "--json", str(out)])
    assert rc == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    assert report["checkpoint"] == str(ckpt) and report["seed"] is None, report


@pytest.mark.parametrize("backend, where, error", [
    ("hf-compile", "tfdash.profiling.hf_peer.HFPeer",
     AttributeError("module 'transformers' has no attribute 'Qwen3ForCausalLM'")),
    ("torch-compile", "tfdash.engine.compiled.CompiledGraphRuntime", RuntimeError("CUDA out of memory."))])
def test_a_peer_that_cannot_be_built_is_skipped_and_the_others_measured(cpu_as_cuda, monkeypatch, tmp_path, capsys,
                                                                        backend, where, error):
    """hf-compile on a transformers without Qwen3, or a peer without memory for its copy, ended the
    bench in a traceback before any backend ran; a peer failing its warm-up was already skipped so."""
    def fails(*a, **k):
        raise error

    monkeypatch.setattr(where, fails)
    out = tmp_path / "bench.json"
    rc = main(["bench", "--model", "qwen3-tiny", "--backends", f"torch-graph,{backend}", "--max-new-tokens", "8",
               "--rounds", "1", "--json", str(out)])
    cap = capsys.readouterr()
    assert rc == 0 and "Traceback" not in cap.err
    said = f"build: {type(error).__name__}: {error}"
    assert f"# {backend} could not be built: {said}" in cap.err.splitlines()
    assert [line.split()[0] for line in cap.out.splitlines()[2:]] == ["torch-graph"]
    report = json.loads(out.read_text())
    assert report["errors"] == {backend: said} and list(report["summary"]) == ["torch-graph"]


def test_a_bench_that_measured_no_backend_says_so_in_its_exit_status(cpu_as_cuda, monkeypatch, tmp_path, capsys):
    """Every backend failing (to build or warm up) printed an empty table and exited 0, as a bench
    that measured them all does."""
    def fails(*a, **k):
        raise RuntimeError("CUDA out of memory.")

    monkeypatch.setattr("tfdash.engine.compiled.CompiledGraphRuntime", fails)
    out = tmp_path / "bench.json"
    rc = main(["bench", "--model", "qwen3-tiny", "--backends", "torch-compile", "--max-new-tokens", "8",
               "--rounds", "1", "--json", str(out)])
    cap = capsys.readouterr()
    assert rc == 2
    assert cap.err.splitlines()[-1] == "tfdash: error: no backend was measured: torch-compile failed"
    assert json.loads(out.read_text())["errors"] == {"torch-compile": "build: RuntimeError: CUDA out of memory."}
