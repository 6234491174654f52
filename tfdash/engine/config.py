"""ModelConfig: the shape of a Qwen3 checkpoint, from its config.json or from a preset.

Reads config.json as transformers 4.x writes it (`rope_theta`, `torch_dtype`) and as 5.x writes
it (`rope_parameters`, `dtype`). Anything tfdash cannot run faithfully (another architecture,
RoPE scaling, attention bias, sliding windows) is refused with one line that names it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from tfdash.errors import ConfigError

SUPPORTED_ARCHITECTURE = "Qwen3ForCausalLM"


@dataclass(frozen=True)
class ModelConfig:
    name: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool
    rope_theta: float
    rms_norm_eps: float
    max_position_embeddings: int
    dtype: str = "bfloat16"  # dtype of the weights on disk (or of the random weights)
    eos_token_ids: tuple[int, ...] = ()

    @property
    def q_size(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def kv_size(self) -> int:
        return self.num_kv_heads * self.head_dim

    @property
    def qkv_size(self) -> int:
        return self.q_size + 2 * self.kv_size

    @property
    def group_size(self) -> int:
        return self.num_heads // self.num_kv_heads

    def param_count(self) -> int:
        h, i, d = self.hidden_size, self.intermediate_size, self.head_dim
        per_layer = self.qkv_size * h + h * self.q_size + 3 * i * h + 2 * h + 2 * d
        head = 0 if self.tie_word_embeddings else self.vocab_size * h
        return self.vocab_size * h + self.num_layers * per_layer + h + head

    def to_dict(self) -> dict:
        d = asdict(self)
        d["eos_token_ids"] = list(self.eos_token_ids)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> ModelConfig:
        d = dict(d)
        d["eos_token_ids"] = tuple(d.get("eos_token_ids", ()))
        return cls(**d)

    def with_name(self, name: str) -> ModelConfig:
        return replace(self, name=name)

    def validate(self) -> None:
        problems = []
        for field in ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim",
                      "intermediate_size", "vocab_size", "max_position_embeddings"):
            if getattr(self, field) <= 0:
                problems.append(f"{field}={getattr(self, field)} must be positive")
        if self.num_kv_heads > 0 and self.num_heads % self.num_kv_heads:
            problems.append(f"num_attention_heads={self.num_heads} is not a multiple of "
                            f"num_key_value_heads={self.num_kv_heads}")
        if self.head_dim % 2:
            problems.append(f"head_dim={self.head_dim} must be even for RoPE")
        if self.dtype not in ("bfloat16", "float16", "float32"):
            problems.append(f"dtype {self.dtype!r} is not one of bfloat16, float16, float32")
        if problems:
            raise ConfigError(f"model config {self.name}: " + "; ".join(problems))


def _qwen3(name, hidden, layers, heads, intermediate, tied):
    """A published Qwen3 dense shape (its config.json): 8 kv heads of 128 dims, vocab 151936."""
    return ModelConfig(
        name=name, hidden_size=hidden, num_layers=layers, num_heads=heads, num_kv_heads=8, head_dim=128,
        intermediate_size=intermediate, vocab_size=151936, tie_word_embeddings=tied,
        rope_theta=1_000_000.0, rms_norm_eps=1e-6, max_position_embeddings=40960,
        eos_token_ids=(151645, 151643),
    )


PRESETS: dict[str, ModelConfig] = {
    # The published Qwen3 dense sizes (Qwen/Qwen3-*/config.json); 8B and up untie the lm_head.
    "qwen3-0.6b": _qwen3("qwen3-0.6b", 1024, 28, 16, 3072, True),
    "qwen3-1.7b": _qwen3("qwen3-1.7b", 2048, 28, 16, 6144, True),
    "qwen3-4b": _qwen3("qwen3-4b", 2560, 36, 32, 9728, True),
    "qwen3-8b": _qwen3("qwen3-8b", 4096, 36, 32, 12288, False),
    "qwen3-14b": _qwen3("qwen3-14b", 5120, 40, 40, 17408, False),
    "qwen3-32b": _qwen3("qwen3-32b", 5120, 64, 64, 25600, False),
    # Same structure (GQA 2:1, q/k norm, tied head), small enough to decode fast on a laptop CPU.
    "qwen3-tiny": ModelConfig(
        name="qwen3-tiny", hidden_size=256, num_layers=4, num_heads=4, num_kv_heads=2,
        head_dim=64, intermediate_size=768, vocab_size=8192, tie_word_embeddings=True,
        rope_theta=1_000_000.0, rms_norm_eps=1e-6, max_position_embeddings=8192,
    ),
}


def preset(name: str) -> ModelConfig:
    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigError(f"unknown model preset {name!r}; choose one of {', '.join(PRESETS)}") from None


def _require(raw: dict, key: str, path: Path):
    if key not in raw:
        raise ConfigError(f"{path}: missing required key {key!r}")
    return raw[key]


def _int(raw: dict, key: str, path: Path, default: int | None = None) -> int:
    """raw[key] as an int; a missing or null key takes `default` (required when it is None)."""
    v = raw.get(key) if default is not None else _require(raw, key, path)
    if v is None and default is not None:
        return default
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"{path}: {key} must be an integer, got {v!r}")
    return v


def _float(raw: dict, key: str, path: Path, default: float) -> float:
    v = raw.get(key)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ConfigError(f"{path}: {key} must be a number, got {v!r}")
    return float(v)


def _rope_theta(raw: dict, path: Path) -> float:
    params = raw.get("rope_parameters")
    scaling = raw.get("rope_scaling")
    if isinstance(params, dict):
        # transformers 5.x: {"rope_theta": ..., "rope_type": "default"}
        kind = params.get("rope_type", params.get("type", "default"))
        if kind != "default":
            raise ConfigError(f"{path}: rope_type {kind!r} is not supported (only default RoPE)")
        if "rope_theta" in params:
            return _float(params, "rope_theta", path, 10000.0)
    if isinstance(scaling, dict) and scaling.get("rope_type", scaling.get("type", "default")) != "default":
        kind = scaling.get("rope_type", scaling.get("type"))
        raise ConfigError(f"{path}: rope_scaling {kind!r} is not supported (only default RoPE)")
    return _float(raw, "rope_theta", path, 10000.0)


def load_config(ckpt_dir: str | Path) -> ModelConfig:
    """Read `ckpt_dir/config.json` into a ModelConfig, refusing what tfdash cannot run."""
    d = Path(ckpt_dir)
    if not d.exists():
        raise ConfigError(f"checkpoint directory {d} does not exist")
    if not d.is_dir():
        raise ConfigError(f"{d} is not a directory")
    path = d / "config.json"
    if not path.is_file():
        raise ConfigError(f"{d} has no config.json")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ConfigError(f"{path}: cannot read JSON ({e})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a JSON object")

    archs = raw.get("architectures") or []
    model_type = raw.get("model_type")
    if archs and SUPPORTED_ARCHITECTURE not in archs:
        raise ConfigError(f"{path}: architecture {', '.join(map(str, archs))} is not supported; "
                          f"tfdash runs {SUPPORTED_ARCHITECTURE}")
    if model_type != "qwen3" and (model_type is not None or not archs):
        # Both must agree when given: an edited config can keep one of them from another model.
        raise ConfigError(f"{path}: model_type {model_type!r} is not supported; tfdash runs "
                          f"{SUPPORTED_ARCHITECTURE} (model_type 'qwen3')")
    if raw.get("attention_bias"):
        raise ConfigError(f"{path}: attention_bias=true is not supported")
    if raw.get("use_sliding_window"):
        raise ConfigError(f"{path}: use_sliding_window=true is not supported")
    act = raw.get("hidden_act", "silu")
    if act != "silu":
        raise ConfigError(f"{path}: hidden_act {act!r} is not supported (only silu)")

    hidden = _int(raw, "hidden_size", path)
    heads = _int(raw, "num_attention_heads", path)
    head_dim = _int(raw, "head_dim", path, hidden // heads if heads else 0)
    eos = raw.get("eos_token_id")
    eos_ids = tuple(eos) if isinstance(eos, list) else ((eos,) if isinstance(eos, int) else ())
    dtype = raw.get("dtype") or raw.get("torch_dtype") or "bfloat16"
    cfg = ModelConfig(
        name=d.name,
        hidden_size=hidden,
        num_layers=_int(raw, "num_hidden_layers", path),
        num_heads=heads,
        num_kv_heads=_int(raw, "num_key_value_heads", path, heads),
        head_dim=head_dim,
        intermediate_size=_int(raw, "intermediate_size", path),
        vocab_size=_int(raw, "vocab_size", path),
        tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
        rope_theta=_rope_theta(raw, path),
        rms_norm_eps=_float(raw, "rms_norm_eps", path, 1e-6),
        max_position_embeddings=_int(raw, "max_position_embeddings", path, 32768),
        dtype=str(dtype),
        eos_token_ids=eos_ids,
    )
    cfg.validate()
    return cfg
