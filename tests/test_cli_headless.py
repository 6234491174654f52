"""`tfdash --headless`: a run on CPU in well under 30 s, and every bad input as one stderr line.

A few runs are real subprocesses (`python -m tfdash`, and the installed console script), so
start-up, exit codes and stderr are what a user sees; the rest call `tfdash.cli.main(argv)`
in-process, which goes through the same error handling, to keep the suite fast.
"""

import os
import re
import shutil
import sys
from pathlib import Path

import pytest
import torch
from conftest import assert_one_line_error, run_tfdash
from safetensors.torch import load_file, save_file

from tfdash import __version__
from tfdash.cli import main
from tfdash.engine import DEFAULT_PROMPT, load_engine
from tfdash.engine.tokenizer import StandInTokenizer
from tfdash.errors import CapacityError

pytestmark = pytest.mark.usefixtures("one_thread")

SUMMARY = re.compile(
    r"(?P<tps>[\d.]+) tok/s over the whole generation \((?P<new>\d+) new tokens in (?P<wall>[\d.]+) s, "
    r"prompt included(, paused (?P<held>[\d.]+) s not counted)?\); "
    r"time to first token (?P<ttft>[\d.]+) ms; decode-only (?P<decode>[\d.]+) tok/s; "
    r"ms/step p50 (?P<p50>[\d.]+) p99 (?P<p99>[\d.]+); "
    r"prompt (?P<prompt>\d+) tokens( taken in chunks in (?P<prefill>[\d.]+) ms)?, (?P<new2>\d+) new(; |$)", re.M)


def parse_summary(stdout: str) -> dict:
    m = SUMMARY.search(stdout)
    assert m, stdout
    return {k: float(v) for k, v in m.groupdict().items() if v is not None}


def cli(capsys, *argv):
    """main(argv) in-process -> (rc, stdout, stderr)."""
    capsys.readouterr()  # drop what fixtures printed
    try:
        rc = main(list(argv))
    except SystemExit as e:  # the parser's own mistakes exit from it, as argparse's do
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


# -- runs ----------------------------------------------------------------------------------
@pytest.mark.slow  # a fresh interpreter and a 76-step run: ~3 s idle, more on a busy 2-core runner
def test_headless_default_runs_fast_on_cpu():
    r = run_tfdash("--headless", "--max-new-tokens", "64", "--device", "cpu")
    assert r.rc == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert r.wall_s < 30, f"took {r.wall_s:.1f} s"
    s = parse_summary(r.stdout)
    assert s["new"] == s["new2"] == 64
    assert s["prompt"] == len(StandInTokenizer(8192).encode(DEFAULT_PROMPT))
    assert 0 < s["p50"] <= s["p99"]
    assert s["tps"] == pytest.approx(64 / s["wall"], rel=0.02, abs=0.1)
    assert 0 < s["wall"] < r.wall_s
    assert 0 < s["prefill"] <= s["ttft"]  # the prompt's chunks and the first token's head: part of the TTFT
    assert r.stdout.startswith(DEFAULT_PROMPT)
    continuation = r.stdout[len(DEFAULT_PROMPT):r.stdout.index("\n")]
    assert len(continuation.split()) >= 32  # readable pseudo-words, not an empty stream
    # stderr carries one description line: what ran, on what, from which weights.
    assert "qwen3-tiny" in r.stderr and "random weights" in r.stderr and "torch-eager on cpu" in r.stderr


def test_seed_with_a_checkpoint_is_refused(ckpt_factory, capsys):
    """--seed shapes random weights only: with --ckpt it changed nothing, unsaid. It is refused, as
    --model with --ckpt is, `--seed 0` too (it was taken silently, being the default's value); no
    --seed stays fine."""
    ckpt = ckpt_factory(tied=False, sharded=True)
    for seed in ("3", "0"):
        rc, out, err = cli(capsys, "--headless", "--ckpt", str(ckpt.path), "--seed", seed, "--max-new-tokens", "2")
        assert rc == 2 and out == ""
        assert_one_line_error(err, f"--seed {seed}", "give --ckpt or --seed, not both")
    rc, out, err = cli(capsys, "--headless", "--ckpt", str(ckpt.path), "--max-new-tokens", "2")
    assert rc == 0, err


def test_bench_refuses_seed_with_a_checkpoint_before_the_device(ckpt_factory, capsys):
    """bench checks its arguments first, on any machine; --seed with --ckpt was left to the engine's
    build, so a CPU host said 'tfdash bench needs a CUDA device' and a GPU one said it after '# loading'."""
    ckpt = ckpt_factory(tied=False, sharded=True)
    rc, out, err = cli(capsys, "bench", "--ckpt", str(ckpt.path), "--seed", "3", "--backends", "torch-graph",
                       "--max-new-tokens", "8")
    assert rc == 2 and out == ""
    assert_one_line_error(err, "--seed 3", "give --ckpt or --seed, not both")


def test_headless_checkpoint_in_process(ckpt_factory, capsys):
    ckpt = ckpt_factory(tied=False, sharded=True)
    rc, out, err = cli(capsys, "--headless", "--ckpt", str(ckpt.path), "--prompt", "w5 w6 w7",
                       "--max-new-tokens", "9", "--ignore-eos")
    assert rc == 0, err
    s = parse_summary(out)
    assert (s["prompt"], s["new"]) == (3, 9)
    # The streamed text is the checkpoint tokenizer's words for the engine's greedy tokens.
    eng = load_engine(ckpt=ckpt.path, device="cpu", capacity=64)
    gen = eng.generate("w5 w6 w7", 9, ignore_eos=True)
    list(gen)
    assert out.splitlines()[0] == "w5 w6 w7" + eng.tokenizer.decode(gen.tokens)
    assert str(ckpt.path) in err


def test_not_a_terminal_falls_back_to_headless(capsys, monkeypatch):
    monkeypatch.delenv("TFDASH_FORCE_TUI", raising=False)
    rc, out, err = cli(capsys, "--max-new-tokens", "3", "--device", "cpu")
    assert rc == 0
    assert "stdout is not a terminal; running --headless" in err
    assert parse_summary(out)["new"] == 3


def test_a_dumb_terminal_runs_headless(capsys, monkeypatch):
    import sys

    from tfdash import cli as cli_mod

    monkeypatch.delenv("TFDASH_FORCE_TUI", raising=False)
    monkeypatch.setenv("TERM", "dumb")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)  # a terminal, but one that cannot draw
    monkeypatch.setattr(cli_mod, "run_dashboard", lambda args: pytest.fail("drew the dashboard on TERM=dumb"))
    rc, out, err = cli(capsys, "--max-new-tokens", "3", "--device", "cpu")
    assert rc == 0
    assert "TERM=dumb cannot draw the dashboard; running --headless" in err
    assert parse_summary(out)["new"] == 3


def test_save_is_honoured_headless(capsys, monkeypatch, tmp_path):
    """`tfdash --save run.json > log`: stdout is not a terminal, so the run is headless; the
    snapshot is written all the same (it was silently dropped), and a bad path refused first."""
    from tfdash.profiling.export import load_snapshot

    monkeypatch.delenv("TFDASH_FORCE_TUI", raising=False)
    save = tmp_path / "run.json"
    rc, out, err = cli(capsys, "--max-new-tokens", "3", "--device", "cpu", "--save", str(save))
    assert rc == 0, err
    assert f"wrote {save}" in out and load_snapshot(save).new_tokens == 3
    rc, out, err = cli(capsys, "--headless", "--max-new-tokens", "3", "--device", "cpu", "--save", str(tmp_path))
    assert rc == 2 and out == ""
    assert_one_line_error(err, "--save", "is a directory")


def test_headless_only_options_are_not_dropped_by_the_dashboard(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("TFDASH_FORCE_TUI", "1")
    rc, out, err = cli(capsys, "--device", "cpu", "--export", str(tmp_path / "out"), "--profile")
    assert rc == 2 and list(tmp_path.iterdir()) == []
    assert_one_line_error(err, "--profile, --export: with --headless only", "--save PATH")
    assert "p profiles, e exports, a A/Bs" in err, err


def test_headless_only_refusal_names_the_keys_the_keymap_binds(capsys, monkeypatch, tmp_path):
    """The line said 'p profiles, e exports, a A/Bs' with those keys moved in config.json: in the
    dashboard it sent the user to keys that do nothing there."""
    import json

    monkeypatch.setenv("TFDASH_FORCE_TUI", "1")
    monkeypatch.setenv("TFDASH_CONFIG_DIR", str(tmp_path))
    (tmp_path / "config.json").write_text(json.dumps({"keymap": {"profile": "o", "export.snapshot": "E", "ab": "f6"}}))
    rc, out, err = cli(capsys, "--device", "cpu", "--profile")
    assert rc == 2
    assert_one_line_error(err, "--profile: with --headless only", "o profiles, E exports, f6 A/Bs", "--save PATH")


def test_version_and_help(capsys):
    r = run_tfdash("--version")
    assert r.rc == 0 and r.stdout.strip() == f"tfdash {__version__}"
    script = Path(sys.executable).parent / "tfdash"
    if script.exists():  # the installed console script
        import subprocess

        p = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0 and p.stdout.strip() == f"tfdash {__version__}"
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for opt in ("--headless", "--ckpt", "--model", "--max-new-tokens", "--ignore-eos", "--device",
                "--version", "analyze"):
        assert opt in out, opt
    with pytest.raises(SystemExit) as e:
        main(["analyze", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for opt in ("--dim", "--sweep", "--operands", "--json", "--target", "--capacity"):
        assert opt in out, opt


# -- one-line errors, real subprocesses ---------------------------------------------------
def test_missing_directory_subprocess(tmp_path):
    r = run_tfdash("--headless", "--ckpt", str(tmp_path / "nowhere"))
    assert r.rc != 0
    assert_one_line_error(r.stderr, "nowhere", "does not exist")


def test_truncated_safetensors_subprocess(ckpt_copy):
    d = ckpt_copy(tied=True)
    f = d / "model.safetensors"
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    r = run_tfdash("--headless", "--ckpt", str(d), "--max-new-tokens", "4")
    assert r.rc != 0
    assert_one_line_error(r.stderr, "model.safetensors", "truncated")


def test_missing_tokenizer_subprocess(ckpt_copy):
    d = ckpt_copy(tied=True)
    (d / "tokenizer.json").unlink()
    r = run_tfdash("--headless", "--ckpt", str(d), "--max-new-tokens", "4")
    assert r.rc != 0
    assert_one_line_error(r.stderr, "tokenizer.json")


# -- one-line errors, in-process ------------------------------------------------------------
def _edit_tensors(d, edit):
    path = d / "model.safetensors"
    sd = load_file(str(path))
    edit(sd)
    save_file(sd, str(path))


def _edit_config(d, **change):
    import json

    path = d / "config.json"
    raw = json.loads(path.read_text())
    raw.update(change)
    path.write_text(json.dumps(raw))


def _corrupt_header(d):
    f = d / "model.safetensors"
    data = bytearray(f.read_bytes())
    data[8:20] = b"\xff" * 12
    f.write_bytes(bytes(data))


BROKEN = [
    ("no-config", lambda d: (d / "config.json").unlink(), ["no config.json"]),
    ("llama", lambda d: _edit_config(d, architectures=["LlamaForCausalLM"], model_type="llama"),
     ["LlamaForCausalLM", "not supported"]),
    ("missing-tensor", lambda d: _edit_tensors(d, lambda sd: sd.pop("model.layers.0.mlp.down_proj.weight")),
     ["missing", "model.layers.0.mlp.down_proj.weight"]),
    ("extra-tensor", lambda d: _edit_tensors(d, lambda sd: sd.update({"model.extra.weight": sd["model.norm.weight"].clone()})),
     ["unexpected", "model.extra.weight"]),
    ("misshaped", lambda d: _edit_tensors(
        d, lambda sd: sd.update({"model.layers.1.self_attn.o_proj.weight": sd["model.layers.1.self_attn.o_proj.weight"].T.contiguous()[:32]})),
     ["misshaped", "model.layers.1.self_attn.o_proj.weight"]),
    ("int32", lambda d: _edit_tensors(
        d, lambda sd: sd.update({"model.layers.0.input_layernorm.weight": sd["model.layers.0.input_layernorm.weight"].int()})),
     ["wrongly typed", "model.layers.0.input_layernorm.weight I32"]),
    ("fp8", lambda d: (_edit_tensors(d, lambda sd: sd.update({k: v.to(torch.float8_e4m3fn) for k, v in sd.items()
                                                             if k.endswith("proj.weight")})),
                       _edit_config(d, quantization_config={"quant_method": "fp8", "fmt": "e4m3"})),
     ["a quantized checkpoint (fp8) is not supported", "bfloat16, float16 or float32"]),
    ("corrupt-header", _corrupt_header, ["model.safetensors", "corrupt"]),
    ("truncated", lambda d: (d / "model.safetensors").write_bytes((d / "model.safetensors").read_bytes()[:1000]),
     ["truncated"]),
    ("no-tokenizer", lambda d: (d / "tokenizer.json").unlink(), ["no tokenizer.json"]),
    ("bad-tokenizer", lambda d: (d / "tokenizer.json").write_text("{}"), ["tokenizer.json", "cannot load tokenizer"]),
]


@pytest.mark.parametrize("name, breaker, needles", BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_checkpoint_is_one_line(ckpt_copy, capsys, name, breaker, needles):
    d = ckpt_copy(tied=True)
    breaker(d)
    rc, out, err = cli(capsys, "--headless", "--ckpt", str(d), "--max-new-tokens", "4")
    assert rc == 2
    assert out == ""  # nothing was generated
    assert_one_line_error(err, *needles)


def test_tokenizer_larger_than_the_model(ckpt_copy, capsys):
    """A tokenizer.json that is not the checkpoint's own can yield ids past the embedding."""
    from conftest import word_tokenizer

    d = ckpt_copy(tied=True)
    word_tokenizer(500).save(str(d / "tokenizer.json"))
    rc, out, err = cli(capsys, "--headless", "--ckpt", str(d), "--prompt", "w1 w420", "--max-new-tokens", "4")
    assert rc == 2
    assert_one_line_error(err, "prompt token id 420", "vocabulary of 300")
    rc, out, err = cli(capsys, "--headless", "--ckpt", str(d), "--prompt", "w1 w299", "--max-new-tokens", "4")
    assert rc == 0, err


def test_past_max_position_embeddings(ckpt_factory, capsys):
    ckpt = ckpt_factory(tied=True, max_position_embeddings=48)
    # 3 prompt tokens + 45 new = 48 positions: exactly fits.
    rc, out, err = cli(capsys, "--headless", "--ckpt", str(ckpt.path), "--prompt", "w1 w2 w3",
                       "--max-new-tokens", "45")
    assert rc == 0, err
    assert parse_summary(out)["new"] == 45
    rc, out, err = cli(capsys, "--headless", "--ckpt", str(ckpt.path), "--prompt", "w1 w2 w3",
                       "--max-new-tokens", "46")
    assert rc == 2
    assert_one_line_error(err, "= 49", "max_position_embeddings=48", "(--max-new-tokens 45 or fewer)")


def test_past_cache_capacity(ckpt_factory):
    """The CLI sizes the cache to fit the run; the engine refuses a run past a fixed capacity
    with the same one-line CapacityError (before any weight is loaded)."""
    ckpt = ckpt_factory(tied=True)
    with pytest.raises(CapacityError) as e:
        load_engine(ckpt=ckpt.path, device="cpu", capacity=16, prompt="w1 w2 w3 w4", max_new_tokens=14)
    assert "needs 17 KV positions, past the cache capacity of 16 (--max-new-tokens 13 or fewer)" in str(e.value)
    with pytest.raises(CapacityError, match=r"the prompt alone fills it: a larger cache\)$"):
        load_engine(ckpt=ckpt.path, device="cpu", capacity=2, prompt="w1 w2 w3 w4", max_new_tokens=1)
    load_engine(ckpt=ckpt.path, device="cpu", capacity=16, prompt="w1 w2 w3 w4", max_new_tokens=13)
    eng = load_engine(ckpt=ckpt.path, device="cpu", capacity=16)
    with pytest.raises(CapacityError, match="past the cache capacity of 16"):
        eng.generate("w1 w2 w3 w4", 14)
    with pytest.raises(CapacityError, match="capacity 512 is past max_position_embeddings=256"):
        load_engine(ckpt=ckpt.path, device="cpu", capacity=512)


def test_bad_flags_are_argparse_errors(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--headless", "--max-new-tokens", "0"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "--max-new-tokens" in err and "must be at least 1" in err
    rc, out, err = cli(capsys, "--headless", "--model", "qwen3-huge")
    assert rc == 2
    assert_one_line_error(err, "unknown model preset 'qwen3-huge'")
    rc, out, err = cli(capsys, "--headless", "--model", "qwen3-tiny", "--ckpt", "/x")
    assert rc == 2
    assert_one_line_error(err, "not both")
    rc, out, err = cli(capsys, "--headless", "--device", "cpu", "--backend", "torch-graph")
    assert rc == 2
    assert_one_line_error(err, "backend torch-graph needs --device cuda")
    import torch

    if not torch.cuda.is_available():
        rc, out, err = cli(capsys, "--headless", "--device", "cuda")
        assert rc == 2
        assert_one_line_error(err, "no CUDA device is available")


# -- the decode loop the headless run consumes ----------------------------------------------
@pytest.fixture(scope="module")
def tiny_engine():
    return load_engine(model="qwen3-tiny", device="cpu", capacity=256)


def test_generation_yields_exactly_max_new_tokens(tiny_engine):
    eng = tiny_engine
    prompt = eng.encode("alpha beta gamma delta epsilon")
    gen = eng.generate(prompt, 20)
    events = list(gen)
    assert len(events) == 20
    assert [e.index for e in events] == list(range(20))
    assert [e.token_id for e in events] == gen.tokens
    assert all(0 <= t < eng.config.vocab_size for t in gen.tokens)
    s = gen.stats
    assert (s.prompt_tokens, s.new_tokens, s.stopped) == (5, 20, "")
    assert s.prefill_positions == 5 and s.prefill_ns > 0  # the prompt in one chunk, then the head
    assert len(s.step_ns) == 19  # the chunk and the head are no step: the first token is theirs
    assert all(ns > 0 for ns in s.step_ns)
    assert [e.step_ns for e in events] == [s.prefill_ns, *s.step_ns]
    elapsed = [e.elapsed_ns for e in events]
    assert elapsed == sorted(elapsed) and elapsed[-1] == s.wall_ns
    assert s.tok_per_s == pytest.approx(20 / (s.wall_ns / 1e9))
    assert s.ms_per_step_p50 <= s.ms_per_step_p99
    # The streamed text is the tokenizer's text for the tokens.
    assert "".join(e.text for e in events) == eng.tokenizer.decode(gen.tokens)
    m = parse_summary(s.summary())
    assert (m["prompt"], m["new"]) == (5, 20)


def test_generation_is_deterministic_and_depth_independent(tiny_engine):
    prompt = [11, 22, 33]
    runs = [[e.token_id for e in tiny_engine.generate(prompt, 12, depth=d)] for d in (1, 4, 16)]
    assert runs[0] == runs[1] == runs[2]
    # The prompt walk feeds prompt tokens, not predictions: the first new token is the
    # prediction after the whole prompt, as a fresh single-step reference computes it.
    rt = tiny_engine.runtime
    rt.reset(prompt)
    for _ in prompt:
        rt.step()
    assert int(rt.bufs["out_tokens"][len(prompt) - 1]) == runs[0][0]


def test_cancel_mid_run_keeps_what_was_measured(tiny_engine):
    prompt = [1, 2, 3, 4]
    full = [e.token_id for e in tiny_engine.generate(prompt, 30)]
    gen = tiny_engine.generate(prompt, 30, depth=8)
    seen = []
    for ev in gen:
        seen.append(ev.token_id)
        if len(seen) == 7:
            gen.cancel()
    s = gen.stats
    assert seen == full[:7]  # stopped after exactly the events consumed
    assert gen.tokens == seen
    assert (s.new_tokens, s.stopped) == (7, "cancelled")
    # The steps that were in flight ran and stay timed; none beyond the window was launched.
    assert 3 + 7 <= len(s.step_ns) <= 3 + 7 + 8
    assert s.wall_ns > 0 and s.tok_per_s > 0
    # The engine is reusable after a cancel: the next run starts clean and matches.
    assert [e.token_id for e in tiny_engine.generate(prompt, 30)] == full


def test_stop_event_from_another_thread(tiny_engine):
    import threading

    stop = threading.Event()
    gen = tiny_engine.generate([5, 6], 200, stop=stop)
    got = []

    def consume():
        for ev in gen:
            got.append(ev)
            if len(got) == 3:
                stop.set()

    t = threading.Thread(target=consume)
    t.start()
    t.join(60)
    assert not t.is_alive()
    assert len(got) == 3 and gen.stats.stopped == "cancelled"


def test_eos_stops_unless_ignored(ckpt_factory):
    """A checkpoint's eos ends the generation at that token; ignore_eos runs to the end."""
    import json

    ckpt = ckpt_factory(tied=True)
    eng = load_engine(ckpt=ckpt.path, device="cpu", capacity=64)
    first = [e.token_id for e in eng.generate([7, 8, 9], 6, ignore_eos=True)]
    # The same weights with eos = the third greedy token.
    d = ckpt.path.parent / (ckpt.path.name + "-eos")
    if not d.exists():
        shutil.copytree(ckpt.path, d)
    raw = json.loads((d / "config.json").read_text())
    raw["eos_token_id"] = [first[2]]
    (d / "config.json").write_text(json.dumps(raw))
    eng = load_engine(ckpt=d, device="cpu", capacity=64)
    gen = eng.generate([7, 8, 9], 6)
    events = list(gen)
    stop_at = first.index(first[2]) + 1
    assert [e.token_id for e in events] == first[:stop_at]
    assert gen.stats.stopped == "eos" and gen.stats.new_tokens == stop_at
    assert len(list(eng.generate([7, 8, 9], 6, ignore_eos=True))) == 6


def test_the_torch_fallback_on_cuda_is_named(monkeypatch):
    """On a CUDA machine without tilelang the engine is the torch peer: said in one line, unless
    the user asked for a backend."""
    import tfdash.engine as engine

    monkeypatch.setattr(engine, "tilelang_available", lambda: False)
    note = engine.fallback_note("cuda", "torch-graph", None)
    assert note and "tilelang" in note and "torch-graph" in note
    assert engine.fallback_note("cuda", "torch-graph", "torch-graph") is None  # asked for
    assert engine.fallback_note("cpu", "torch-eager", None) is None
    monkeypatch.setattr(engine, "tilelang_available", lambda: True)
    assert engine.fallback_note("cuda", "torch-graph", None) is None


@pytest.mark.parametrize("argv, needles", [
    (["--backends", "tilelang-graph,nope"], ["unknown backend(s): nope", "tilelang-latekv"]),
    (["--backends", "torch-graph,tilelang-graph,torch-graph"],  # it built the peer twice, one row replacing the other
     ["--backends names torch-graph twice: each backend is one row of the table"]),
    (["--gemv", "down:seg=8", "--gemv", "down:seg=8"], ["--gemv down:seg=8 given twice: each is one row"]),
    (["--also-capacity", "2048", "--also-capacity", "2048"], ["--also-capacity 2048 given twice: each is one row"]),
    (["--gemv", "BAD"], ["--gemv 'BAD': want OP:KEY=V[,KEY=V][+OP:...] with each OP once"]),
    (["--gemv", "down:seg=0"], ["--gemv 'down:seg=0': 'seg=0' is not rows=N, seg=N"]),
    (["--gemv", "down:seg=99999999999"],  # past the weight's shape: said once the model is known
     ["--gemv 'down:seg=99999999999': GEMV setting down:seg=99999999999 is past 24"]),
    (["--capacity", "0"], ["--capacity 0 must be positive"]),
    (["--rounds", "0"], ["--rounds 0 must be at least 1"]),  # it named --max-new-tokens too
    (["--max-new-tokens", "-2"], ["--max-new-tokens -2 must be at least 1"]),
    (["--max-new-tokens", "40960"], ["max-new-tokens (40960) = 40972 is past max_position_embeddings=40960"]),
    (["--model", "qwen3-9000b"], ["unknown model preset 'qwen3-9000b'"]),
    (["--ckpt", "/x", "--seed", "5"], ["give --ckpt or --seed, not both"]),
    ([], ["needs a CUDA device"]),
])
def test_bench_errors_are_one_line(argv, needles):
    """`tfdash bench` on this GPU-less machine: argument mistakes first, then the missing device."""
    import torch

    if torch.cuda.is_available() and not argv:
        pytest.skip("a CUDA device is present")
    from conftest import assert_one_line_error, run_tfdash

    r = run_tfdash("bench", *argv, timeout=120)
    assert r.rc == 2
    assert_one_line_error(r.stderr, *needles)
    other = {"--rounds": "--max-new-tokens", "--max-new-tokens": "--rounds"}.get(argv[0] if argv else "")
    assert other is None or other not in r.stderr  # only the bad one named
    if argv:  # an argument's mistake is said as the parser says its own: the command and where its help is
        assert r.stderr.startswith("tfdash bench: error: ") and r.stderr.rstrip().endswith("(see tfdash bench --help)")


def test_a_mistyped_command_is_named_with_the_commands(capsys):
    """`tfdash bogus` said "unrecognized arguments: bogus", as if it were a flag's value."""
    rc, out, err = cli(capsys, "bnech")
    assert rc == 2 and out == ""
    assert err.strip().splitlines() == ["tfdash: error: no command 'bnech' (the commands: open, analyze, bench, diff, "
                                        "counters) (see tfdash --help)"]


@pytest.mark.parametrize("cmd", [["--headless"], ["analyze"], ["bench"]])
def test_an_empty_ckpt_is_its_own_line(capsys, cmd):
    """`--ckpt ""` said ". has no config.json" (headless), or was no --ckpt at all (analyze and
    bench priced and ran random weights); it is said by the command's parser, as `--json ""` is."""
    prog = "tfdash" if cmd == ["--headless"] else f"tfdash {cmd[0]}"
    rc, out, err = cli(capsys, *cmd, "--ckpt", "")
    assert rc == 2 and out == ""
    assert err.strip().splitlines() == [f"{prog}: error: argument --ckpt: '' is empty: give a checkpoint directory "
                                        f"(see {prog} --help)"]


def test_the_knobs_a_record_names_are_the_ones_in_effect(monkeypatch):
    from tfdash.settings import SETTINGS

    monkeypatch.setenv("TFDASH_STATE_ARENA", "0")
    monkeypatch.setenv("TFDASH_CONTINUOUS_STEPS", " ")  # blank: the default
    with SETTINGS.override(depth=7):
        got = SETTINGS.values()
    assert got["state_arena"] == 0 and got["depth"] == 7 and got["pdl"] is True and got["continuous_steps"] == 256
    assert set(got) == set(SETTINGS.KNOBS)


def test_bench_says_a_bad_knob_in_one_line_before_any_work():
    from conftest import assert_one_line_error, run_tfdash

    r = run_tfdash("bench", timeout=120, env={"TFDASH_CONTINUOUS_STEPS": "abc"})
    assert r.rc != 0
    assert_one_line_error(r.stderr, "TFDASH_CONTINUOUS_STEPS='abc': want a whole number")


def test_a_note_mid_line_ends_the_texts_line_where_both_streams_reach_one_place(tmp_path):
    """The A/B's progress line on stderr came while tokens streamed to stdout; in a terminal (or one
    file for both) it was spliced into a word ("...tikiothusttfdash: building ...")."""
    import io

    from tfdash.profiling.headless import Streams

    path = tmp_path / "both.txt"
    with open(path, "w", encoding="utf-8") as out, os.fdopen(os.dup(out.fileno()), "w", encoding="utf-8") as err:
        # one open file under both, as `>f 2>&1` makes
        s = Streams(out, err)
        s.text("the prompt and tiki")
        s.note("tfdash: building tilelang-lateres beside the running plan…")
        s.text("othust more text\n")
        s.note("tfdash: at a line's end, no blank line")
    assert path.read_text(encoding="utf-8").splitlines() == [
        "the prompt and tiki", "tfdash: building tilelang-lateres beside the running plan…", "othust more text",
        "tfdash: at a line's end, no blank line"]
    out, err = io.StringIO(), io.StringIO()  # apart (stdout piped to a file): the text stays as generated
    s = Streams(out, err)
    s.text("tiki")
    s.note("tfdash: a note")
    s.text("othust")
    assert out.getvalue() == "tikiothust" and err.getvalue() == "tfdash: a note\n"


def test_a_non_number_is_said_in_one_wording(capsys):
    """`diff --top abc` said argparse's "invalid int value: 'abc'" where `--max-new-tokens abc` said
    "'abc' is not an integer": every option that takes a number says it tfdash's way."""
    for argv, says in ((["diff", "--top", "abc", "a.json", "b.json"], "argument --top: 'abc' is not an integer"),
                       (["--headless", "--max-new-tokens", "abc"], "argument --max-new-tokens: 'abc' is not an integer"),
                       (["counters", "--all", "--timeout", "soon"], "argument --timeout: 'soon' is not a number")):
        capsys.readouterr()
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
        assert_one_line_error(capsys.readouterr().err, says)
