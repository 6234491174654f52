"""ModelConfig: the shape of a Qwen3 checkpoint, from its config.json or from a preset.

Reads config.json as transformers 4.x writes it (`rope_theta`, `torch_dtype`) and as 5.x writes
it (`rope_parameters`, `dtype`). Anything tfdash cannot run faithfully (another architecture,
RoPE scaling, attention bias, sliding windows) is refused with one line that names it.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from tfdash.errors import ConfigError
from tfdash.pathstat import stat_or_none
from tfdash.textsafe import visible

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


# Sizes past these are not a Qwen3 checkpoint but a typo or a hostile file; each is far above
# the largest published model, so the plan (sized by them) is never built for them.
LIMITS = {"hidden_size": 1 << 16, "num_hidden_layers": 1024, "num_attention_heads": 1024,
          "num_key_value_heads": 1024, "head_dim": 1024, "intermediate_size": 1 << 18,
          "vocab_size": 1 << 22, "max_position_embeddings": 1 << 24}
MAX_CONFIG_BYTES = 16 << 20


FIELD_LIMITS = {"hidden_size": "hidden_size", "num_layers": "num_hidden_layers", "num_heads": "num_attention_heads",
                "num_kv_heads": "num_key_value_heads", "head_dim": "head_dim",
                "intermediate_size": "intermediate_size", "vocab_size": "vocab_size",
                "max_position_embeddings": "max_position_embeddings"}


def within_limits(model: dict, capacity: int | None = None) -> bool:
    """A ModelConfig dict (as a snapshot records it) whose sizes are all in LIMITS, and a capacity
    no larger than its max_position_embeddings: safe to build a plan from."""
    if not isinstance(model, dict):
        return False
    for field, key in FIELD_LIMITS.items():
        v = model.get(field)
        if isinstance(v, bool) or not isinstance(v, int) or not 0 < v <= LIMITS[key]:
            return False
    return capacity is None or 0 < capacity <= model["max_position_embeddings"]


def _require(raw: dict, key: str, path: Path):
    if key not in raw:
        raise ConfigError(f"{path}: missing required key {key!r}")
    return raw[key]


def _show(v) -> str:
    text = repr(v)
    return visible(text if len(text) <= 40 else text[:37] + "...")


def _int(raw: dict, key: str, path: Path, default: int | None = None) -> int:
    """raw[key] as an int; a missing or null key takes `default` (required when it is None)."""
    v = raw.get(key) if default is not None else _require(raw, key, path)
    if v is None and default is not None:
        return default
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"{path}: {key} must be an integer, got {_show(v)}")
    if key in LIMITS and not 0 < v <= LIMITS[key]:
        raise ConfigError(f"{path}: {key}={_show(v)} is out of range (1..{LIMITS[key]})")
    return v


def _float(raw: dict, key: str, path: Path, default: float, positive: bool = False) -> float:
    """raw[key] as a finite number; `positive` wants > 0, otherwise >= 0."""
    v = raw.get(key)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ConfigError(f"{path}: {key} must be a number, got {_show(v)}")
    f = float(v) if abs(v) < 1e308 else math.inf
    if not math.isfinite(f) or f < 0 or (positive and f == 0):
        want = "a finite number > 0" if positive else "a finite number >= 0"
        raise ConfigError(f"{path}: {key}={_show(v)} is not supported (accepted: {want})")
    return f


def _bool(raw: dict, key: str, path: Path, default: bool) -> bool:
    v = raw.get(key)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise ConfigError(f"{path}: {key} must be true or false, got {_show(v)}")
    return v


def _rope_kind(section: dict, key: str, path: Path) -> None:
    kind = section.get("rope_type", section.get("type", "default"))
    if kind not in ("default", None):
        raise ConfigError(f"{path}: {key} type {_show(kind)} is not supported (accepted: default RoPE)")


def _rope_theta(raw: dict, path: Path) -> float:
    params = raw.get("rope_parameters")
    scaling = raw.get("rope_scaling")
    for key, section in (("rope_parameters", params), ("rope_scaling", scaling)):
        if section is not None and not isinstance(section, dict):
            raise ConfigError(f"{path}: {key} must be an object, got {_show(section)}")
        if section:
            _rope_kind(section, key, path)  # both are checked: one never hides the other
    if isinstance(params, dict) and "rope_theta" in params:
        # transformers 5.x: {"rope_theta": ..., "rope_type": "default"}
        return _float(params, "rope_theta", path, 10000.0, positive=True)
    return _float(raw, "rope_theta", path, 10000.0, positive=True)


def _eos(raw: dict, path: Path) -> tuple[int, ...]:
    eos = raw.get("eos_token_id")
    items = eos if isinstance(eos, list) else ([] if eos is None else [eos])
    if any(isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in items):
        raise ConfigError(f"{path}: eos_token_id must be an integer or a list of integers, got {_show(eos)}")
    return tuple(items)


def _read_json(path: Path) -> dict:
    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise ConfigError(f"{path}: larger than any config.json ({MAX_CONFIG_BYTES} bytes)")
        raw = json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant)
    except RecursionError:
        raise ConfigError(f"{path}: cannot read JSON (nested too deeply)") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:  # ValueError: JSON, NaN, 5000-digit ints
        raise ConfigError(f"{path}: cannot read JSON ({visible(str(e).splitlines()[0])[:120]})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a JSON object")
    return raw


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def why_not_a_file(path: Path) -> str | None:
    """What stands at `path` in place of a readable file, said as it is (None: a regular file, or
    a link to one). A directory, a FIFO or a dangling link is not "missing"."""
    if path.is_symlink() and not path.exists():
        return f"{path}: a link to {visible(str(path.readlink()))}, which does not exist"
    if path.is_dir():
        return f"{path}: is a directory, not a file"
    if path.exists() and not path.is_file():  # reading a FIFO would block
        return f"{path}: not a regular file (a FIFO, device or socket)"
    return None if path.exists() else f"{path}: no such file"


def _not_quantized(raw: dict, path: Path) -> None:
    """A quantized checkpoint (Qwen3-8B-FP8, an AWQ or GPTQ export) keeps its weights in 8 or 4 bits beside
    scale tensors, which neither the tilelang nor the torch engines read: said from config.json's
    `quantization_config` before any weight is opened, rather than as a list of mistyped tensors."""
    q = raw.get("quantization_config")
    if not q:  # absent, null or {}: a plain checkpoint
        return
    method = q.get("quant_method") if isinstance(q, dict) else None
    bits = q.get("bits") if isinstance(q, dict) else None
    what = " ".join(visible(str(v))[:40] for v in (method, bits and f"{bits}-bit") if v) or "quantization_config"
    raise ConfigError(f"{path}: a quantized checkpoint ({what}) is not supported; tfdash runs bfloat16, float16 "
                      "or float32 weights: give the checkpoint it was quantized from (Qwen/Qwen3-8B for "
                      "Qwen/Qwen3-8B-FP8)")


def _stat(path: Path, folder: Path, follow: bool = True) -> os.stat_result | None:
    """`path`'s stat (its link's own where not `follow`), or None where Path.exists says nothing is
    there. Any other error, a folder on the way that cannot be read or searched (chmod 000), is one
    line naming `folder`, where Path.exists raised PermissionError."""
    try:
        return stat_or_none(path, follow)
    except OSError as e:
        raise ConfigError(f"{folder}: cannot read ({e.strerror or e})") from None


_MODEL_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")


def hub_cache() -> Path:
    """Where Hugging Face's hub keeps downloaded models: HF_HUB_CACHE, else HF_HOME/hub, else
    ~/.cache/huggingface/hub (huggingface_hub's own order, and its os.path.expanduser: a `~user` with
    no home stays as written, where Path.expanduser raised RuntimeError, a traceback)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.path.expanduser(os.environ["HF_HUB_CACHE"]))
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface")
    return Path(os.path.expanduser(home)) / "hub"


def _as_model_id(text: str) -> str:
    """After "does not exist", for `--ckpt Qwen/Qwen3-8B`: tfdash reads a folder, so a Hugging Face model
    id is named as one, with its downloaded copy (the snapshot refs/main names) or how to download it."""
    if not _MODEL_ID.fullmatch(text):
        return ""
    model = hub_cache() / ("models--" + text.replace("/", "--"))
    try:
        ref = (model / "refs" / "main").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        ref = ""
    found = [p.parent for p in sorted(model.glob("snapshots/*/config.json"))]
    main = [p for p in found if p.name == ref] or (found if len(found) == 1 else [])
    if main:
        return f"; as a Hugging Face model id, {text}'s downloaded copy is {main[0]}"
    return (f"; if {text} is a Hugging Face model id, download it (hf download {text} --local-dir DIR) "
            "and give that folder")


def _folder_name(d: Path) -> str:
    """The model's name: its folder's own name, not the path as typed (`--ckpt .`, `./` or `..` named it
    '' or '..'). `.` and `..` are taken off the path joined to the shell's working folder ($PWD, as
    `pwd` says it) without following symlinks: a symlinked folder's link name is the model's (a Hugging
    Face snapshot's target is a hash), unless the path so read is not the folder that was read."""
    here = os.environ.get("PWD", "")
    try:
        here = here if os.path.isabs(here) and os.path.samefile(here, ".") else os.getcwd()
        flat = Path(os.path.normpath(os.path.join(here, d)))
        same = os.path.samefile(flat, d)
    except OSError:
        flat, same = d, False
    return (flat if same else d.resolve()).name or str(d.resolve())


def load_config(ckpt_dir: str | Path) -> ModelConfig:
    """Read `ckpt_dir/config.json` into a ModelConfig, refusing what tfdash cannot run. Every
    refusal is one line naming the key, the value and what is accepted."""
    if ckpt_dir == "":  # Path("") is ".": it said ". has no config.json"
        raise ConfigError("--ckpt '' is empty: give a checkpoint directory")
    d = Path(ckpt_dir)
    st = _stat(d, d)
    if st is None:
        raise ConfigError(f"checkpoint directory {d} does not exist{_as_model_id(str(ckpt_dir))}")
    if not stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"{d} is not a directory")
    path = d / "config.json"
    if _stat(path, d, follow=False) is None:
        inside = sorted(p.parent for p in d.glob("snapshots/*/config.json"))  # a Hugging Face cache's model folder
        hint = f"; the Hugging Face cache's checkpoint in it is {inside[-1]}" if len(inside) == 1 else (
            f"; it is a Hugging Face cache folder: give one of {', '.join(map(str, inside))}" if inside else "")
        raise ConfigError(f"{d} has no config.json{hint}")
    if why_not_a_file(path):
        raise ConfigError(why_not_a_file(path))
    raw = _read_json(path)

    archs = raw.get("architectures") or []
    model_type = raw.get("model_type")
    if not isinstance(archs, list) or not all(isinstance(a, str) for a in archs):
        raise ConfigError(f"{path}: architectures must be a list of names, got {_show(archs)}")
    if archs and SUPPORTED_ARCHITECTURE not in archs:
        raise ConfigError(f"{path}: architecture {visible(', '.join(archs))[:120]} is not supported; "
                          f"tfdash runs {SUPPORTED_ARCHITECTURE}")
    if model_type != "qwen3" and (model_type is not None or not archs):
        # Both must agree when given: an edited config can keep one of them from another model.
        raise ConfigError(f"{path}: model_type {_show(model_type)} is not supported; tfdash runs "
                          f"{SUPPORTED_ARCHITECTURE} (model_type 'qwen3')")
    _not_quantized(raw, path)
    if _bool(raw, "attention_bias", path, False):
        raise ConfigError(f"{path}: attention_bias=true is not supported")
    if _bool(raw, "use_sliding_window", path, False):
        raise ConfigError(f"{path}: use_sliding_window=true is not supported")
    act = raw.get("hidden_act", "silu")
    if act != "silu":
        raise ConfigError(f"{path}: hidden_act {_show(act)} is not supported (only silu)")

    hidden = _int(raw, "hidden_size", path)
    heads = _int(raw, "num_attention_heads", path)
    head_dim = _int(raw, "head_dim", path, max(1, hidden // heads))
    dtype = raw.get("dtype") or raw.get("torch_dtype") or "bfloat16"
    if dtype not in ("bfloat16", "float16", "float32"):
        raise ConfigError(f"{path}: dtype {_show(dtype)} is not supported (accepted: bfloat16, float16, float32)")
    cfg = ModelConfig(
        name=_folder_name(d),
        hidden_size=hidden,
        num_layers=_int(raw, "num_hidden_layers", path),
        num_heads=heads,
        num_kv_heads=_int(raw, "num_key_value_heads", path, heads),
        head_dim=head_dim,
        intermediate_size=_int(raw, "intermediate_size", path),
        vocab_size=_int(raw, "vocab_size", path),
        tie_word_embeddings=_bool(raw, "tie_word_embeddings", path, False),
        rope_theta=_rope_theta(raw, path),
        rms_norm_eps=_float(raw, "rms_norm_eps", path, 1e-6),
        max_position_embeddings=_int(raw, "max_position_embeddings", path, 32768),
        dtype=str(dtype),
        eos_token_ids=_eos(raw, path),
    )
    cfg.validate()
    return cfg
