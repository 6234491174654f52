"""Hostile and broken checkpoints: nothing is read from outside the checkpoint, nothing blocks,
no error echoes bytes of a file it refused, non-finite weights are named, the config is checked
against the tensors before anything is sized by it, and a sharded checkpoint streams shard by
shard (peak host RSS measured in a fresh process)."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
from conftest import assert_one_line_error, run_tfdash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.torch import load_file, save_file

from tfdash.engine.checkpoint import inventory, load_state_dict, read_header
from tfdash.engine.config import load_config
from tfdash.errors import CheckpointError, TfdashError

REPO = Path(__file__).resolve().parents[1]
INDEX = "model.safetensors.index.json"


def _index(d: Path) -> dict:
    return json.loads((d / INDEX).read_text())


def _set_index(d: Path, weight_map: dict) -> None:
    (d / INDEX).write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))


def _load(d: Path):
    return load_state_dict(d, load_config(d), torch.float32)


@pytest.mark.parametrize("name", ["../outside/model.safetensors", "/etc/passwd", "sub/model.safetensors",
                                  "..", ".", "", "a\\b.safetensors", 7, None, "~x"])
def test_index_names_are_plain_files_in_the_checkpoint(ckpt_copy, tmp_path, name):
    d = ckpt_copy(tied=False, sharded=True)
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    wm = _index(d)["weight_map"]
    victim = sorted(wm)[0]
    (outside / "model.safetensors").write_bytes((d / wm[victim]).read_bytes())  # a valid shard elsewhere
    wm[victim] = name
    _set_index(d, wm)
    with pytest.raises(CheckpointError) as e:
        _load(d)
    msg = str(e.value)
    assert "plain file name" in msg and victim in msg and "\n" not in msg


def test_an_absolute_index_entry_never_opens_the_file(ckpt_copy, tmp_path):
    d = ckpt_copy(tied=False, sharded=True)
    secret = tmp_path / "secret"
    secret.write_bytes(b"SECRETS!" + b"x" * 100)
    wm = _index(d)["weight_map"]
    wm[sorted(wm)[0]] = str(secret)
    _set_index(d, wm)
    with pytest.raises(CheckpointError) as e:
        _load(d)
    n = struct.unpack("<Q", b"SECRETS!")[0]
    assert str(n) not in str(e.value) and "SECRETS" not in str(e.value)


def test_a_header_length_is_never_echoed(tmp_path):
    p = tmp_path / "model.safetensors"
    p.write_bytes(b"root:x:0:0:root:/root:/bin/bash\n")
    with pytest.raises(CheckpointError) as e:
        read_header(p)
    assert str(struct.unpack("<Q", b"root:x:0")[0]) not in str(e.value)


@pytest.mark.parametrize("raw, said", [(b"[" * 100_000 + b"]" * 100_000, "(JSON nested too deeply)"),
                                       (b'{"a": ' + b"9" * 5000 + b"}", "(not JSON)")],
                         ids=["nested", "long-number"])
def test_a_header_python_cannot_parse_is_one_line(ckpt_copy, raw, said):
    """A header of arrays in arrays past the recursion limit, or with a 5000-digit number, ended
    `tfdash --ckpt` in a RecursionError or ValueError traceback."""
    d = ckpt_copy(tied=True)
    path = d / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw)
    r = run_tfdash("--headless", "--ckpt", str(d), "--device", "cpu", "--max-new-tokens", "2")
    assert r.rc == 2 and r.stdout == ""
    assert_one_line_error(r.stderr, f"{path}: corrupt safetensors header {said}")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs")
@pytest.mark.parametrize("which", ["single", "shard", "index"])
def test_a_fifo_is_refused_without_blocking(ckpt_copy, which):
    d = ckpt_copy(tied=False, sharded=which != "single")
    if which == "single":
        target = d / "model.safetensors"
    elif which == "shard":
        target = d / sorted(set(_index(d)["weight_map"].values()))[0]
    else:
        target = d / INDEX
    target.unlink()
    os.mkfifo(target)
    code = textwrap.dedent(f"""
        import torch
        from tfdash.engine.checkpoint import load_state_dict
        from tfdash.engine.config import load_config
        from tfdash.errors import CheckpointError
        try:
            load_state_dict({str(d)!r}, load_config({str(d)!r}), torch.float32)
        except CheckpointError as e:
            print(e)
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert "not a regular file" in p.stdout and target.name in p.stdout, (p.stdout, p.stderr)


def test_symlinked_shards_load(ckpt_copy, tmp_path):
    """The Hugging Face cache keeps files as symlinks into a blobs folder: names are confined, not
    resolved paths, so this still loads."""
    d = ckpt_copy(tied=False, sharded=True)
    blobs = tmp_path / "blobs"
    blobs.mkdir()
    for shard in set(_index(d)["weight_map"].values()):
        (d / shard).rename(blobs / shard)
        (d / shard).symlink_to(blobs / shard)
    assert _load(d)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_weights_name_the_tensor(ckpt_copy, value):
    d = ckpt_copy(tied=True)
    path = d / "model.safetensors"
    sd = load_file(str(path))
    sd["model.layers.1.mlp.down_proj.weight"][3, 5] = value
    save_file(sd, str(path))
    with pytest.raises(CheckpointError) as e:
        _load(d)
    msg = str(e.value)
    assert "model.layers.1.mlp.down_proj.weight" in msg and "NaN or Inf" in msg and "\n" not in msg


def test_non_finite_weights_through_the_cli(ckpt_copy):
    d = ckpt_copy(tied=True)
    path = d / "model.safetensors"
    sd = load_file(str(path))
    sd["model.norm.weight"][0] = float("nan")
    save_file(sd, str(path))
    r = run_tfdash("--headless", "--ckpt", str(d), "--device", "cpu", "--max-new-tokens", "2")
    assert r.rc == 2
    assert_one_line_error(r.stderr, "model.norm.weight", "NaN or Inf")


def test_config_is_checked_against_the_tensors_before_the_plan(ckpt_copy, monkeypatch):
    """A config with more layers than the checkpoint holds is refused by the tensor inventory
    before a plan (sized by the config) is built."""
    from tfdash.engine import load_engine
    from tfdash.engine import plan as plan_mod

    d = ckpt_copy(tied=True)
    cfg = json.loads((d / "config.json").read_text())
    cfg["num_hidden_layers"] = 900
    (d / "config.json").write_text(json.dumps(cfg))
    built = []
    monkeypatch.setattr(plan_mod, "build_plan", lambda *a, **k: built.append(1))
    import tfdash.engine as engine_mod

    monkeypatch.setattr(engine_mod, "build_plan", lambda *a, **k: built.append(1))
    t0 = time.monotonic()
    with pytest.raises(TfdashError) as e:
        load_engine(ckpt=d, device="cpu")
    assert "num_hidden_layers=900" in str(e.value) and "hold 2 layers" in str(e.value)
    assert not built and time.monotonic() - t0 < 10


# -- fuzz: the safetensors header and the index ------------------------------------------------------

FUZZ = settings(max_examples=120, deadline=2000, suppress_health_check=[HealthCheck.too_slow,
                                                                         HealthCheck.function_scoped_fixture])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)


def _one_line(fn):
    try:
        fn()
    except CheckpointError as e:
        assert "\n" not in str(e) and str(e)
        return e
    return None


@FUZZ
@given(st.dictionaries(st.text(max_size=30), json_values, max_size=6), st.binary(max_size=64),
       st.integers(-4, 4))
def test_fuzzed_safetensors_headers(tmp_path_factory, header, data, skew):
    p = tmp_path_factory.mktemp("st") / "model.safetensors"
    raw = json.dumps(header).encode()
    p.write_bytes(struct.pack("<Q", max(0, len(raw) + skew)) + raw + data)
    _one_line(lambda: read_header(p))


@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes_as_safetensors(tmp_path_factory, blob):
    p = tmp_path_factory.mktemp("st") / "model.safetensors"
    p.write_bytes(blob)
    _one_line(lambda: read_header(p))


@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    from conftest import write_ckpt

    return write_ckpt(tmp_path_factory.mktemp("shard"), tied=False, sharded=True).path


@FUZZ
@given(json_values | st.dictionaries(st.text(max_size=30), json_values, max_size=5))
def test_fuzzed_index(sharded, tmp_path_factory, weight_map):
    d = tmp_path_factory.mktemp("idx")
    for f in sharded.iterdir():
        (d / f.name).symlink_to(f)
    (d / INDEX).unlink()
    (d / INDEX).write_text(json.dumps({"weight_map": weight_map}))
    cfg = load_config(d)
    err = _one_line(lambda: inventory(d, cfg))
    assert err is not None  # no fuzzed map is the real one


# -- shard by shard: peak host memory ---------------------------------------------------------------

RSS_CHILD = textwrap.dedent("""
    import resource, sys, torch
    import safetensors.torch  # imported before the first reading, so the growth is the load alone
    from tfdash.engine.checkpoint import load_state_dict
    from tfdash.engine.config import load_config
    from tfdash.engine.weights import pack
    d, device = sys.argv[1], sys.argv[2]
    cfg = load_config(d)
    torch.cat([torch.zeros(2, 2).to(device)] * 2).to(torch.bfloat16)  # warm the device's op tables
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    w = pack(cfg, load_state_dict(d, cfg, torch.float32, device))
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(before, after, sum(t.numel() * t.element_size() for t in w.values()))
""")
MARGIN = 64 << 20  # the interpreter's own growth while loading: allocator slack, safetensors' buffers


def _write_big_sharded(d: Path, shards: int) -> int:
    """A Qwen3-shaped f32 checkpoint of about 200 MB in `shards` shards; returns the largest shard."""
    from tfdash.engine.checkpoint import expected_tensors
    from tfdash.engine.config import ModelConfig

    cfg = ModelConfig(name="big", hidden_size=512, num_layers=8, num_heads=8, num_kv_heads=4, head_dim=64,
                      intermediate_size=4096, vocab_size=4096, tie_word_embeddings=False, rope_theta=1e6,
                      rms_norm_eps=1e-6, max_position_embeddings=4096, dtype="float32")
    names = list(expected_tensors(cfg).items())
    target = sum(torch.Size(shape).numel() * 4 for _, shape in names) / shards
    groups, size = [[]], 0
    for n, shape in names:  # fill shards to about total/shards bytes each
        if size >= target:
            groups.append([])
            size = 0
        groups[-1].append((n, shape))
        size += torch.Size(shape).numel() * 4
    weight_map, largest = {}, 0
    gen = torch.Generator().manual_seed(0)
    for s, group in enumerate(groups):
        part = {n: torch.randn(shape, generator=gen) * 0.02 for n, shape in group}
        fn = f"model-{s + 1:05d}-of-{len(groups):05d}.safetensors"
        save_file(part, str(d / fn))
        largest = max(largest, (d / fn).stat().st_size)
        weight_map.update({n: fn for n in part})
        del part
    _set_index(d, weight_map)
    (d / "config.json").write_text(json.dumps({
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 512,
        "num_hidden_layers": 8, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 64,
        "intermediate_size": 4096, "vocab_size": 4096, "tie_word_embeddings": False, "rope_theta": 1e6,
        "rms_norm_eps": 1e-6, "max_position_embeddings": 4096, "torch_dtype": "float32"}))
    return largest


@pytest.mark.slow
def test_sharded_load_holds_one_shard_of_host_memory_at_a_time(tmp_path):
    """To a device that is not host memory (the meta device stands in for the GPU on CPU), the
    loader's peak host RSS grows by at most the largest shard plus a fixed margin; to the CPU, by
    at most the model plus the largest shard (no second copy of the whole model)."""
    largest = _write_big_sharded(tmp_path, shards=8)
    total = sum(f.stat().st_size for f in tmp_path.glob("*.safetensors"))
    assert total > 4 * largest  # the bound below is well under the whole model
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    for device, bound in (("meta", largest + MARGIN), ("cpu", total + largest + MARGIN)):
        p = subprocess.run([sys.executable, "-c", RSS_CHILD, str(tmp_path), device], capture_output=True,
                           text=True, timeout=300, env=env, cwd=REPO)
        assert p.returncode == 0, p.stderr
        before, after, model = map(int, p.stdout.split())
        assert model > 0.95 * total
        grew = after - before
        assert grew < bound, (device, grew / 2**20, bound / 2**20, largest / 2**20, total / 2**20)


def test_a_word_level_tokenizer_without_an_unknown_token_is_one_line(ckpt_copy):
    from tokenizers import Tokenizer, models, pre_tokenizers

    d = ckpt_copy(tied=True)
    tok = Tokenizer(models.WordLevel({"hello": 0, "world": 1}))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(d / "tokenizer.json"))
    r = run_tfdash("--headless", "--ckpt", str(d), "--device", "cpu", "--max-new-tokens", "2",
                   "--prompt", "hello stranger")
    assert r.rc == 2
    assert_one_line_error(r.stderr, "tokenizer.json", "cannot encode the prompt")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs")
def test_a_fifo_tokenizer_is_refused(ckpt_copy):
    from tfdash.engine.tokenizer import load_tokenizer

    d = ckpt_copy(tied=True)
    (d / "tokenizer.json").unlink()
    os.mkfifo(d / "tokenizer.json")
    with pytest.raises(CheckpointError, match="not a regular file"):
        load_tokenizer(d)


def test_the_finite_check_covers_every_slice(monkeypatch, tmp_path):
    from tfdash.engine import checkpoint

    monkeypatch.setattr(checkpoint, "FINITE_CHUNK", 7)
    t = torch.ones(10, 5)
    checkpoint.check_finite(tmp_path, "ok", t)
    t[9, 4] = float("inf")  # in the last, short slice
    with pytest.raises(CheckpointError, match="tensor w holds 1 NaN or Inf"):
        checkpoint.check_finite(tmp_path, "w", t)


def test_the_dashboard_checks_the_tensors_before_the_screen_opens(ckpt_copy, tmp_path):
    d = ckpt_copy(tied=True)
    path = d / "model.safetensors"
    sd = load_file(str(path))
    sd.pop("model.layers.1.mlp.up_proj.weight")
    save_file(sd, str(path))
    r = run_tfdash("--ckpt", str(d), "--device", "cpu", env={"TFDASH_FORCE_TUI": "1",
                                                             "TFDASH_CONFIG_DIR": str(tmp_path / "cfg")})
    assert r.rc == 2
    assert_one_line_error(r.stderr, "1 missing", "model.layers.1.mlp.up_proj.weight")


def test_a_broken_checkpoint_is_said_before_the_lengths_its_config_allows(ckpt_copy, tmp_path):
    """Headless too: a missing tensor is the checkpoint's fault whatever --max-new-tokens asks for, so it is
    said first, not a length mistake the user would fix only to meet the broken file next."""
    d = ckpt_copy(tied=True)
    path = d / "model.safetensors"
    sd = load_file(str(path))
    sd.pop("model.layers.1.mlp.up_proj.weight")
    save_file(sd, str(path))
    r = run_tfdash("--ckpt", str(d), "--device", "cpu", "--headless", "--max-new-tokens", "4000",
                   env={"TFDASH_CONFIG_DIR": str(tmp_path / "cfg")})
    assert r.rc == 2
    assert_one_line_error(r.stderr, "1 missing", "model.layers.1.mlp.up_proj.weight")
