"""Checkpoint loading: safetensors single-file and sharded, bf16/f16/f32 on disk, validated.

Every broken checkpoint is a CheckpointError whose one line names the file or tensor at fault.
(The same failures through the CLI, as one stderr line and no traceback: test_cli_headless.py.)
"""

import json
import struct

import pytest
import torch
from safetensors.torch import load_file, save_file

from tfdash.engine.checkpoint import expected_tensors, inventory, load_state_dict, read_header
from tfdash.engine.config import load_config
from tfdash.engine.weights import load_weights, pack
from tfdash.errors import CheckpointError


def hf_tensors(path):
    """Every tensor of a checkpoint folder, read with safetensors directly."""
    out = {}
    for f in sorted(path.glob("*.safetensors")):
        out.update(load_file(str(f)))
    return out


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("sharded", [False, True], ids=["single", "sharded"])
def test_load_each_disk_dtype(ckpt_factory, dtype, sharded):
    ckpt = ckpt_factory(tied=True, sharded=sharded, dtype=dtype)
    cfg = load_config(ckpt.path)
    assert cfg.dtype == dtype  # config.json records the dtype on disk
    disk = hf_tensors(ckpt.path)
    assert {t.dtype for t in disk.values()} == {getattr(torch, dtype)}
    want = expected_tensors(cfg)
    assert set(disk) == set(want)  # tied: transformers does not save lm_head
    for load_as in (torch.float32, torch.bfloat16):
        sd = load_state_dict(ckpt.path, cfg, load_as)
        assert set(sd) == set(want)
        for name, t in sd.items():
            assert t.dtype == load_as and tuple(t.shape) == want[name]
            assert torch.equal(t, disk[name].to(load_as)), name


def test_sharded_index_maps_every_tensor(ckpt_factory):
    ckpt = ckpt_factory(tied=False, sharded=True)
    cfg = load_config(ckpt.path)
    files = inventory(ckpt.path, cfg)
    index = json.loads((ckpt.path / "model.safetensors.index.json").read_text())["weight_map"]
    assert set(files) == set(expected_tensors(cfg)) == set(index)
    assert "lm_head.weight" in files
    assert len({p.name for p in files.values()}) >= 3
    for name, p in files.items():
        assert p.name == index[name]


def test_pack_concatenates_qkv_and_gate_up(ckpt_factory):
    ckpt = ckpt_factory(tied=False, sharded=False)
    cfg = load_config(ckpt.path)
    disk = hf_tensors(ckpt.path)
    w = load_weights(cfg, ckpt.path, torch.float32)
    q, k, v = (disk[f"model.layers.1.self_attn.{n}_proj.weight"] for n in "qkv")
    assert torch.equal(w["L1.w_qkv"], torch.cat([q, k, v]))
    assert w["L1.w_qkv"].shape == (cfg.qkv_size, cfg.hidden_size)
    g, u = disk["model.layers.0.mlp.gate_proj.weight"], disk["model.layers.0.mlp.up_proj.weight"]
    assert torch.equal(w["L0.w_gu"], torch.cat([g, u]))
    assert torch.equal(w["lm_head"], disk["lm_head.weight"])
    assert not torch.equal(w["lm_head"], w["embed"])
    assert torch.equal(w["L0.attn_norm"], disk["model.layers.0.input_layernorm.weight"])
    assert torch.equal(w["L0.mlp_norm"], disk["model.layers.0.post_attention_layernorm.weight"])


def test_tied_checkpoint_may_carry_lm_head(ckpt_copy):
    """Some tied checkpoints store lm_head.weight anyway; it is accepted and not used."""
    d = ckpt_copy(tied=True)
    sd = load_file(str(d / "model.safetensors"))
    sd["lm_head.weight"] = sd["model.embed_tokens.weight"].clone()
    save_file(sd, str(d / "model.safetensors"))
    cfg = load_config(d)
    w = pack(cfg, load_state_dict(d, cfg, torch.float32))
    assert "lm_head" not in w


def rewrite(d, edit):
    path = d / "model.safetensors"
    sd = load_file(str(path))
    edit(sd)
    save_file(sd, str(path))


def _load(d):
    cfg = load_config(d)
    return load_state_dict(d, cfg, torch.float32)


@pytest.mark.parametrize("edit, needles", [
    (lambda sd: sd.pop("model.layers.1.mlp.up_proj.weight"),
     ["1 missing", "model.layers.1.mlp.up_proj.weight"]),
    (lambda sd: sd.update({"model.layers.0.self_attn.q_proj.bias": torch.zeros(64)}),
     ["1 unexpected", "model.layers.0.self_attn.q_proj.bias"]),
    (lambda sd: sd.update({"model.layers.0.self_attn.k_proj.weight": torch.zeros(16, 64)}),
     ["misshaped", "model.layers.0.self_attn.k_proj.weight [16, 64] (want [32, 64])"]),
    (lambda sd: sd.update({"model.norm.weight": torch.zeros(64, dtype=torch.int32)}),
     ["wrongly typed", "model.norm.weight I32"]),
    (lambda sd: sd.update({"model.norm.weight": torch.zeros(64, dtype=torch.float64)}),
     ["wrongly typed", "model.norm.weight F64"]),
])
def test_inventory_problems_are_named(ckpt_copy, edit, needles):
    d = ckpt_copy(tied=True)
    rewrite(d, edit)
    with pytest.raises(CheckpointError) as e:
        _load(d)
    msg = str(e.value)
    assert "\n" not in msg
    for n in needles:
        assert n in msg


def test_many_problems_in_one_line(ckpt_copy):
    d = ckpt_copy(tied=True)

    def edit(sd):
        for i in range(2):
            for n in ("gate", "up", "down"):
                sd.pop(f"model.layers.{i}.mlp.{n}_proj.weight")
        sd["extra.weight"] = torch.zeros(2)

    rewrite(d, edit)
    with pytest.raises(CheckpointError) as e:
        _load(d)
    msg = str(e.value)
    assert "6 missing" in msg and "(+2 more)" in msg and "1 unexpected: extra.weight" in msg
    assert "\n" not in msg


def test_untied_needs_lm_head(ckpt_copy):
    d = ckpt_copy(tied=False)
    rewrite(d, lambda sd: sd.pop("lm_head.weight"))
    with pytest.raises(CheckpointError, match="1 missing: lm_head.weight"):
        _load(d)


def test_truncated_file(ckpt_copy):
    d = ckpt_copy(tied=True)
    f = d / "model.safetensors"
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match=r"model\.safetensors: truncated safetensors file"):
        _load(d)
    f.write_bytes(data[:5])
    with pytest.raises(CheckpointError, match="truncated safetensors file"):
        _load(d)


def test_truncated_shard(ckpt_copy):
    d = ckpt_copy(tied=False, sharded=True)
    shard = sorted(d.glob("model-*.safetensors"))[1]
    data = shard.read_bytes()
    shard.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError) as e:
        _load(d)
    assert shard.name in str(e.value) and "truncated" in str(e.value)


def test_missing_shard(ckpt_copy):
    d = ckpt_copy(tied=False, sharded=True)
    shard = sorted(d.glob("model-*.safetensors"))[2]
    shard.unlink()
    with pytest.raises(CheckpointError, match=f"shard file\\(s\\) missing: {shard.name}"):
        _load(d)


def test_corrupt_header(ckpt_copy):
    d = ckpt_copy(tied=True)
    f = d / "model.safetensors"
    data = bytearray(f.read_bytes())
    (n,) = struct.unpack("<Q", data[:8])
    data[8:8 + 16] = b"\x00garbage!\xff\xfe{{{{{{"  # the JSON header, smashed
    f.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="corrupt safetensors header"):
        _load(d)
    # A length prefix that claims more header than the file holds.
    data[:8] = struct.pack("<Q", len(data) * 4)
    f.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="header length does not fit"):
        _load(d)


def test_corrupt_entry_offsets(tmp_path):
    """Offsets that disagree with dtype x shape are a corrupt entry, caught before loading."""
    header = json.dumps({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 12]}}).encode()
    f = tmp_path / "x.safetensors"
    f.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 16)
    with pytest.raises(CheckpointError, match="corrupt safetensors entry for 'a'"):
        read_header(f)
    header = json.dumps({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}).encode()
    f.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 16)
    assert read_header(f) == {"a": {"dtype": "F32", "shape": (4,)}}


def test_corrupt_index_and_no_weights(ckpt_copy, tmp_path):
    d = ckpt_copy(tied=False, sharded=True)
    (d / "model.safetensors.index.json").write_text('{"metadata": {}}')
    with pytest.raises(CheckpointError, match="corrupt index"):
        _load(d)
    (d / "model.safetensors.index.json").unlink()  # shards left without the index that orders them
    with pytest.raises(CheckpointError) as e:
        _load(d)
    assert str(e.value).endswith(".safetensors files, but not the index that says which tensor is in which)")
    for f in d.glob("*.safetensors*"):
        f.unlink()
    with pytest.raises(CheckpointError) as e:
        _load(d)
    assert str(e.value) == f"{d}: no model.safetensors or model.safetensors.index.json"
    (d / "pytorch_model.bin").write_bytes(b"a pickle")  # an older export: never unpickled, named
    with pytest.raises(CheckpointError) as e:
        _load(d)
    assert "(it holds pytorch_model.bin: pickled weights, which tfdash does not load;" in str(e.value)
