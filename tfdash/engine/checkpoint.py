"""Checkpoint loading: safetensors, single-file or sharded, validated before a byte is trusted.

Every safetensors header is parsed here first (length prefix, JSON, dtypes, offsets against the
file size), so a truncated or corrupt file is a CheckpointError naming the file, never a crash
inside the loader. The tensor inventory is then checked against what the config implies, and
every missing, unexpected, misshaped or wrongly typed tensor is named in one error.
"""

from __future__ import annotations

import json
import re
import stat
import struct
from pathlib import Path

import torch

from tfdash.engine.config import ModelConfig, why_not_a_file
from tfdash.errors import CheckpointError
from tfdash.textsafe import visible

ST_DTYPES = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32}
ST_ITEMSIZE = {"BF16": 2, "F16": 2, "F32": 4, "F64": 8, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1,
               "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1, "U16": 2, "U32": 4, "U64": 8}
_LAYER = re.compile(r"model\.layers\.(\d{1,9})\.")
FINITE_CHUNK = 1 << 26  # elements per slice of the NaN/Inf check (a 64 MB mask)
MAX_HEADER = 100 * 1024 * 1024  # safetensors' own limit on the JSON header


def expected_tensors(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """HF names and shapes of every tensor a Qwen3ForCausalLM checkpoint must hold (the table in
    tfdash.engine.names)."""
    from tfdash.engine.names import hf_tensors

    return hf_tensors(cfg)


def regular_file(path: Path) -> int:
    """The size of `path`, which must be a regular file (a symlink to one is fine: the Hugging Face
    cache links into its blobs). A FIFO, a device or a directory is refused before it is opened,
    so nothing blocks on it and nothing of it is read."""
    if why_not_a_file(path):  # a directory, a FIFO, a dangling link: said as it is
        raise CheckpointError(why_not_a_file(path))
    try:
        st = path.stat()
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such file") from None
    except OSError as e:
        raise CheckpointError(f"{path}: cannot read ({e.strerror or e})") from None
    if not stat.S_ISREG(st.st_mode):
        raise CheckpointError(f"{path}: not a regular file")
    return st.st_size


def shard_name(index: Path, tensor: str, name) -> str:
    """A shard named by index.json: a plain file name inside the checkpoint directory. Names are
    confined, not resolved paths, so the cache's symlinks still work."""
    if (not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name
            or "\0" in name or name.startswith("~")):
        raise CheckpointError(f"{index}: shard {visible(str(name))[:80]!r} for {visible(tensor)[:80]!r} is not a "
                              f"plain file name in the checkpoint directory")
    return name


def read_header(path: Path) -> dict[str, dict]:
    """Parse and check one safetensors header: {name: {"dtype", "shape", "data_offsets"}}.
    An error names the file and what is wrong with it, never bytes read from it."""
    size = regular_file(path)
    try:
        with path.open("rb") as f:
            prefix = f.read(8)
            if len(prefix) < 8:
                raise CheckpointError(f"{path}: truncated safetensors file ({size} bytes, no header)")
            (n,) = struct.unpack("<Q", prefix)
            if n > MAX_HEADER or n > size - 8:
                raise CheckpointError(f"{path}: not a safetensors file, or truncated (its header length "
                                      f"does not fit in its {size} bytes)")
            raw = f.read(n)
    except OSError as e:
        raise CheckpointError(f"{path}: cannot read ({e.strerror or e})") from None
    try:
        header = json.loads(raw.decode("utf-8"))
    except ValueError:  # not UTF-8, not JSON, or a number past Python's 4300 digits
        raise CheckpointError(f"{path}: corrupt safetensors header (not JSON)") from None
    except RecursionError:  # arrays in arrays past the recursion limit
        raise CheckpointError(f"{path}: corrupt safetensors header (JSON nested too deeply)") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: corrupt safetensors header (not a JSON object)")
    data_len = size - 8 - n
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (start, end) = info["dtype"], list(info["shape"]), info["data_offsets"]
            numel = 1
            for s in shape:
                numel *= int(s)
            ok = dtype in ST_ITEMSIZE and 0 <= start <= end and end - start == numel * ST_ITEMSIZE[dtype]
        except (KeyError, TypeError, ValueError):
            ok = False
        if not ok:
            raise CheckpointError(f"{path}: corrupt safetensors entry for {visible(name)[:80]!r}")
        if end > data_len:
            raise CheckpointError(f"{path}: truncated safetensors file: {visible(name)[:80]!r} needs bytes up to {end} "
                                  f"of the data section, which has {data_len}")
        tensors[name] = {"dtype": dtype, "shape": tuple(int(s) for s in shape)}
    return tensors


def shard_files(ckpt: Path) -> dict[str, Path]:
    """Map each tensor name to the file that holds it (single-file or sharded checkpoints)."""
    index = ckpt / "model.safetensors.index.json"
    single = ckpt / "model.safetensors"
    if index.exists():
        if regular_file(index) > MAX_HEADER:
            raise CheckpointError(f"{index}: larger than any index ({MAX_HEADER} bytes)")
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
            assert isinstance(weight_map, dict)
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AssertionError, RecursionError):
            raise CheckpointError(f"{index}: corrupt index (no weight_map)") from None
        files = {name: ckpt / shard_name(index, name, fn) for name, fn in weight_map.items()}
        missing = sorted({str(p.name) for p in files.values() if not p.exists()})
        if missing:
            raise CheckpointError(f"{index}: shard file(s) missing: {visible(', '.join(missing))[:300]}")
        for p in set(files.values()):
            regular_file(p)
        return files
    if single.exists():
        return {name: single for name in read_header(single)}
    others = sorted(p.name for p in ckpt.glob("*.safetensors"))
    if len(others) == 1:
        only = ckpt / others[0]
        return {name: only for name in read_header(only)}
    raise CheckpointError(f"{ckpt}: no model.safetensors or model.safetensors.index.json{_why_no_weights(ckpt, others)}")


def _why_no_weights(ckpt: Path, safetensors: list[str]) -> str:
    """What the folder holds instead, said after the refusal: pickled weights (which can run code when
    loaded, so they are never read) to convert, or shards without the index that orders them."""
    if len(safetensors) > 1:
        return f" ({len(safetensors)} .safetensors files, but not the index that says which tensor is in which)"
    pickled = sorted(p.name for p in ckpt.glob("pytorch_model*.bin"))
    if pickled:
        return (f" (it holds {visible(pickled[0])[:80]}{' ...' if len(pickled) > 1 else ''}: pickled weights, "
                "which tfdash does not load; save the model again with transformers' save_pretrained, which "
                "writes safetensors)")
    return ""


def _summarise(label: str, items: list[str], most: int = 4) -> str:
    shown = ", ".join(items[:most]) + (f", ... (+{len(items) - most} more)" if len(items) > most else "")
    return f"{len(items)} {label}: {shown}"


def inventory(ckpt: Path, cfg: ModelConfig) -> dict[str, Path]:
    """Check every tensor of the checkpoint against the config; return name -> file."""
    files = shard_files(ckpt)
    headers: dict[Path, dict] = {}
    found: dict[str, dict] = {}
    for name, path in files.items():
        if path not in headers:
            headers[path] = read_header(path)
        if name not in headers[path]:
            raise CheckpointError(f"{path}: index lists {name!r} but the file does not hold it")
        found[name] = headers[path][name]
    layers = {int(m.group(1)) for m in map(_LAYER.match, found) if m}
    if len(layers) != cfg.num_layers:
        raise CheckpointError(f"checkpoint {ckpt}: config.json says num_hidden_layers={cfg.num_layers}, "
                              f"the tensors hold {len(layers)} layers")
    expected = expected_tensors(cfg)
    optional = {"lm_head.weight": (cfg.vocab_size, cfg.hidden_size)} if cfg.tie_word_embeddings else {}
    missing = sorted(n for n in expected if n not in found)
    unexpected = sorted(n for n in found if n not in expected and n not in optional)
    shapes, dtypes = [], []
    for name, info in found.items():
        want = expected.get(name) or optional.get(name)
        if want is None:
            continue
        if info["shape"] != want:
            shapes.append(f"{name} {list(info['shape'])} (want {list(want)})")
        if info["dtype"] not in ST_DTYPES:
            dtypes.append(f"{name} {info['dtype']} (want BF16, F16 or F32)")
    problems = []
    if missing:
        problems.append(_summarise("missing", missing))
    if unexpected:
        problems.append(_summarise("unexpected", unexpected))
    if shapes:
        problems.append(_summarise("misshaped", sorted(shapes)))
    if dtypes:
        problems.append(_summarise("wrongly typed", sorted(dtypes)))
    if problems:
        raise CheckpointError(f"checkpoint {ckpt} does not match its config: " + "; ".join(problems))
    return {n: p for n, p in files.items() if n in expected}


def check_finite(path: Path, name: str, t: torch.Tensor) -> None:
    """One line naming the tensor when it holds NaN or Inf. Checked where the tensor now lives
    (on the GPU it is a cheap reduction); tensors without storage (the meta device) are skipped."""
    if t.device.type == "meta" or not t.is_floating_point():
        return
    # In slices, so the mask is at most FINITE_CHUNK bytes whatever the tensor (one sync each).
    if not all(bool(torch.isfinite(c).all()) for c in t.reshape(-1).split(FINITE_CHUNK)):
        bad = sum(int((~torch.isfinite(c)).sum()) for c in t.reshape(-1).split(FINITE_CHUNK))
        raise CheckpointError(f"{path}: tensor {name} holds {bad} NaN or Inf value(s) (as {str(t.dtype)[6:]}); "
                              f"the checkpoint is corrupt or was saved after a diverged step")


def load_state_dict(ckpt: str | Path, cfg: ModelConfig, dtype: torch.dtype, device="cpu",
                    loaded=None) -> dict[str, torch.Tensor]:
    """Validated HF-named tensors, converted to `dtype` on `device`; `loaded(done_bytes, total_bytes)`
    after each (weights.load_weights)."""
    import math

    from safetensors import SafetensorError, safe_open

    from tfdash.engine.weights import counter

    ckpt = Path(ckpt)
    files = inventory(ckpt, cfg)
    shapes = expected_tensors(cfg)
    count = counter(loaded, sum(math.prod(shapes.get(n, ())) for n in files) * dtype.itemsize)
    by_file: dict[Path, list[str]] = {}
    for name, path in files.items():
        by_file.setdefault(path, []).append(name)
    out = {}
    for path, names in by_file.items():  # shard by shard: host memory holds one shard at a time
        try:
            with safe_open(str(path), framework="pt", device="cpu") as f:
                for name in names:
                    # copy=True: an owned tensor, not a view of the shard's mapping, so the
                    # mapping is released when the shard closes
                    t = f.get_tensor(name).to(device=device, dtype=dtype, copy=True)
                    check_finite(path, name, t)
                    out[name] = t
                    count(t)
        except CheckpointError:
            raise
        except (SafetensorError, OSError, RuntimeError, ValueError) as e:
            raise CheckpointError(f"{path}: cannot load ({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
    return out
