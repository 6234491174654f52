"""ModelConfig: config.json as transformers 4.x and 5.x write it, and the presets.

The 4.x and 5.x spellings are written out by hand below (what each version puts at top level),
and once more by the installed transformers' own `Qwen3Config.save_pretrained`.
"""

import json

import pytest

from tfdash.engine.config import PRESETS, ModelConfig, load_config, preset
from tfdash.errors import ConfigError

# Qwen3-1.7B's config.json as transformers 4.51 writes it: rope_theta and torch_dtype at top level.
HF4 = {
    "architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
    "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 6144,
    "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
    "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
    "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000, "sliding_window": None,
    "tie_word_embeddings": True, "torch_dtype": "bfloat16", "transformers_version": "4.51.0",
    "use_cache": True, "use_sliding_window": False, "vocab_size": 151936,
}

# The same model as transformers 5.x writes it: rope_parameters dict, dtype, layer_types.
HF5 = {
    "architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 151643, "dtype": "bfloat16", "eos_token_id": [151645, 151643], "head_dim": 128,
    "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 6144,
    "layer_types": ["full_attention"] * 28, "max_position_embeddings": 40960, "max_window_layers": 28,
    "model_type": "qwen3", "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
    "pad_token_id": None, "rms_norm_eps": 1e-06,
    "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"},
    "sliding_window": None, "tie_word_embeddings": True, "transformers_version": "5.0.0",
    "use_cache": True, "use_sliding_window": False, "vocab_size": 151936,
}


def write(tmp_path, raw, name="ckpt"):
    d = tmp_path / name
    d.mkdir(exist_ok=True)
    (d / "config.json").write_text(json.dumps(raw))
    return d


@pytest.mark.parametrize("raw", [HF4, HF5], ids=["transformers-4", "transformers-5"])
def test_both_spellings_read_as_the_published_shape(tmp_path, raw):
    cfg = load_config(write(tmp_path, raw, "Qwen3-1.7B"))
    want = PRESETS["qwen3-1.7b"]
    assert cfg.name == "Qwen3-1.7B"
    for field in ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim", "intermediate_size",
                  "vocab_size", "tie_word_embeddings", "rms_norm_eps", "max_position_embeddings"):
        assert getattr(cfg, field) == getattr(want, field), field
    assert cfg.rope_theta == 1_000_000.0 and isinstance(cfg.rope_theta, float)
    assert cfg.dtype == "bfloat16"


def test_the_name_is_the_folders_own_however_it_is_typed(tmp_path, monkeypatch):
    """`--ckpt .` (or `./`, `sub/..`) named the model '' or '..': the header read `tfdash 0.1.0 ·  · . · …`.
    The name is the folder's own; a symlinked folder keeps its link's name, not its target's."""
    d = write(tmp_path, HF4, "Qwen3-1.7B")
    (d / "sub").mkdir()
    (tmp_path / "My-Qwen").symlink_to(d)
    monkeypatch.chdir(d)
    for typed in (".", "./", "sub/..", str(d / "sub" / "..")):
        assert load_config(typed).name == "Qwen3-1.7B", typed
    monkeypatch.chdir(d / "sub")
    assert load_config("..").name == "Qwen3-1.7B"
    assert load_config(tmp_path / "My-Qwen").name == "My-Qwen"
    monkeypatch.chdir(tmp_path / "My-Qwen")  # `cd My-Qwen`: the shell's $PWD keeps the link's name
    monkeypatch.setenv("PWD", str(tmp_path / "My-Qwen"))
    assert load_config(".").name == "My-Qwen"
    monkeypatch.setenv("PWD", str(tmp_path))  # a stale $PWD is not believed
    assert load_config(".").name == "Qwen3-1.7B"


def test_eos_as_int_or_list(tmp_path):
    assert load_config(write(tmp_path, HF4, "a")).eos_token_ids == (151645,)
    assert load_config(write(tmp_path, HF5, "b")).eos_token_ids == (151645, 151643)
    assert load_config(write(tmp_path, {**HF5, "eos_token_id": None}, "c")).eos_token_ids == ()


def test_rope_theta_and_dtype_from_each_place(tmp_path):
    assert load_config(write(tmp_path, {**HF4, "rope_theta": 5e5, "torch_dtype": "float16"}, "a")).rope_theta == 5e5
    assert load_config(write(tmp_path, {**HF4, "torch_dtype": "float16"}, "b")).dtype == "float16"
    five = {**HF5, "rope_parameters": {"rope_theta": 250000.0, "rope_type": "default"}, "dtype": "float32"}
    cfg = load_config(write(tmp_path, five, "c"))
    assert (cfg.rope_theta, cfg.dtype) == (250000.0, "float32")
    # rope_type may be absent from rope_parameters: default RoPE.
    assert load_config(write(tmp_path, {**HF5, "rope_parameters": {"rope_theta": 7.0}}, "d")).rope_theta == 7.0


def test_defaults_for_optional_keys(tmp_path):
    raw = {k: v for k, v in HF4.items() if k not in ("head_dim", "num_key_value_heads", "rope_theta",
                                                     "torch_dtype", "max_position_embeddings")}
    cfg = load_config(write(tmp_path, raw))
    assert cfg.head_dim == 2048 // 16  # hidden / heads, as transformers does
    assert cfg.num_kv_heads == 16  # no GQA
    assert cfg.rope_theta == 10000.0
    assert cfg.max_position_embeddings == 32768


def test_what_installed_transformers_writes(tmp_path):
    from transformers import Qwen3Config

    hf = Qwen3Config(hidden_size=64, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                     head_dim=16, intermediate_size=96, vocab_size=300, rope_theta=12345.0,
                     max_position_embeddings=512, rms_norm_eps=1e-5, tie_word_embeddings=True,
                     architectures=["Qwen3ForCausalLM"])
    hf.save_pretrained(tmp_path)
    cfg = load_config(tmp_path)
    assert (cfg.hidden_size, cfg.num_layers, cfg.num_heads, cfg.num_kv_heads, cfg.head_dim) == (64, 3, 4, 2, 16)
    assert (cfg.intermediate_size, cfg.vocab_size, cfg.max_position_embeddings) == (96, 300, 512)
    assert (cfg.rope_theta, cfg.rms_norm_eps, cfg.tie_word_embeddings) == (12345.0, 1e-5, True)


@pytest.mark.parametrize("change, needle", [
    ({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}, "LlamaForCausalLM"),
    ({"architectures": ["LlamaForCausalLM"]}, "LlamaForCausalLM"),  # model_type left as qwen3
    ({"model_type": "qwen3_moe"}, "qwen3_moe"),
    ({"architectures": None, "model_type": None}, "model_type"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, "yarn"),
    ({"attention_bias": True}, "attention_bias"),
    ({"use_sliding_window": True}, "sliding"),
    ({"hidden_act": "gelu"}, "gelu"),
    ({"num_key_value_heads": 3}, "num_key_value_heads=3"),
    ({"head_dim": 127}, "head_dim=127"),
    ({"hidden_size": "2048"}, "hidden_size"),
    ({"max_position_embeddings": "lots"}, "max_position_embeddings"),
    ({"rms_norm_eps": "tiny"}, "rms_norm_eps"),
    ({"torch_dtype": "float64"}, "float64"),
    ({"quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}},
     "a quantized checkpoint (fp8)"),
    ({"quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128}}, "(awq 4-bit)"),
    ({"quantization_config": "yes"}, "a quantized checkpoint (quantization_config)"),
])
def test_refusals_name_the_problem(tmp_path, change, needle):
    with pytest.raises(ConfigError) as e:
        load_config(write(tmp_path, {**HF4, **change}))
    msg = str(e.value)
    assert needle in msg and "\n" not in msg


def test_refusals_in_transformers_5_spelling(tmp_path):
    with pytest.raises(ConfigError, match="yarn"):
        load_config(write(tmp_path, {**HF5, "rope_parameters": {"rope_type": "yarn", "rope_theta": 1e6,
                                                                "factor": 4.0}}))
    raw = {k: v for k, v in HF5.items() if k != "vocab_size"}
    with pytest.raises(ConfigError, match="vocab_size"):
        load_config(write(tmp_path, raw, "b"))


def test_missing_and_unreadable(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope")
    with pytest.raises(ConfigError, match="no config.json"):
        load_config(tmp_path)
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ConfigError, match="cannot read JSON"):
        load_config(tmp_path)
    (tmp_path / "config.json").write_text("[1, 2]")
    with pytest.raises(ConfigError, match="JSON object"):
        load_config(tmp_path)
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ConfigError, match="not a directory"):
        load_config(f)


def test_presets_and_param_count_match_transformers():
    """param_count against a meta-device transformers model of each preset's shape."""
    import torch
    from transformers import Qwen3ForCausalLM

    from tfdash.engine.names import hf_config

    for name, cfg in PRESETS.items():
        cfg.validate()
        assert preset(name) is cfg
        hf = hf_config(cfg)
        with torch.device("meta"):
            m = Qwen3ForCausalLM(hf)
        assert cfg.param_count() == sum(p.numel() for p in m.parameters()), name
    # The published figure: Qwen3-1.7B has 1.72 B parameters with the tied embedding counted once.
    assert round(PRESETS["qwen3-1.7b"].param_count() / 1e9, 2) == 1.72
    with pytest.raises(ConfigError, match="unknown model preset 'qwen3-9000b'"):
        preset("qwen3-9000b")


def test_dict_round_trip():
    cfg = PRESETS["qwen3-1.7b"]
    d = json.loads(json.dumps(cfg.to_dict()))
    assert ModelConfig.from_dict(d) == cfg
    assert cfg.q_size == 2048 and cfg.kv_size == 1024 and cfg.qkv_size == 4096 and cfg.group_size == 2
