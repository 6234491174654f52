"""Peak host memory while loading a sharded checkpoint, against its largest shard.

    python scripts/load_rss.py --model qwen3-1.7b --device cuda --shards 4 --dir /tmp/tfdash-ckpt

Writes random weights of the preset's shape as a sharded safetensors checkpoint (bf16, the
tensor names and index.json as transformers writes them; once, reused when present), then loads
it in a fresh process with the engine's loader (validation, the NaN/Inf check, packing) onto
--device, and prints one JSON line: peak RSS growth during the load, the largest shard, the whole
checkpoint, and the load time. The loader holds one shard of host memory at a time, so the growth
should stay near the largest shard whatever the model's size (on --device cpu the model itself is
host memory too).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

CHILD = """
import json, resource, sys, time, torch
import safetensors.torch  # imported before the first reading, so the growth is the load alone
from tfdash.engine.checkpoint import load_state_dict
from tfdash.engine.config import load_config
from tfdash.engine.weights import pack
d, device = sys.argv[1], sys.argv[2]
cfg = load_config(d)
torch.cat([torch.zeros(2, 2).to(device)] * 2).to(torch.bfloat16)  # warm the device's op tables
if device.startswith("cuda"):
    torch.cuda.synchronize()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
t0 = time.perf_counter()
w = pack(cfg, load_state_dict(d, cfg, torch.bfloat16, device))
if device.startswith("cuda"):
    torch.cuda.synchronize()
seconds = time.perf_counter() - t0
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"rss_growth_bytes": after - before, "load_s": round(seconds, 3),
                  "device_bytes": sum(t.numel() * t.element_size() for t in w.values())}))
"""


def write_checkpoint(model: str, d: Path, shards: int) -> None:
    import torch
    from safetensors.torch import save_file

    from tfdash.engine.checkpoint import expected_tensors
    from tfdash.engine.config import preset

    cfg = preset(model)
    names = list(expected_tensors(cfg).items())
    target = sum(torch.Size(s).numel() * 2 for _, s in names) / shards
    groups, size = [[]], 0
    for n, shape in names:
        if size >= target:
            groups.append([])
            size = 0
        groups[-1].append((n, shape))
        size += torch.Size(shape).numel() * 2
    d.mkdir(parents=True, exist_ok=True)
    weight_map = {}
    gen = torch.Generator().manual_seed(0)
    for i, group in enumerate(groups):
        fn = f"model-{i + 1:05d}-of-{len(groups):05d}.safetensors"
        part = {n: (torch.randn(s, generator=gen) * 0.02).to(torch.bfloat16) for n, s in group}
        save_file(part, str(d / fn))
        weight_map.update({n: fn for n in part})
        del part
    (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    (d / "config.json").write_text(json.dumps({
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": cfg.hidden_size,
        "num_hidden_layers": cfg.num_layers, "num_attention_heads": cfg.num_heads,
        "num_key_value_heads": cfg.num_kv_heads, "head_dim": cfg.head_dim,
        "intermediate_size": cfg.intermediate_size, "vocab_size": cfg.vocab_size,
        "tie_word_embeddings": cfg.tie_word_embeddings, "rope_theta": cfg.rope_theta,
        "rms_norm_eps": cfg.rms_norm_eps, "max_position_embeddings": cfg.max_position_embeddings,
        "torch_dtype": "bfloat16"}))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="qwen3-tiny")
    p.add_argument("--device", default="cpu")
    p.add_argument("--shards", type=int, default=4)
    p.add_argument("--dir", default="/tmp/tfdash-load-rss")
    args = p.parse_args(argv)
    d = Path(args.dir) / f"{args.model}-{args.shards}"
    if not (d / "model.safetensors.index.json").is_file():
        write_checkpoint(args.model, d, args.shards)
    sizes = [f.stat().st_size for f in d.glob("*.safetensors")]
    root = Path(__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, "-c", CHILD, str(d), args.device], capture_output=True, text=True,
                       cwd=root, env={**__import__("os").environ, "PYTHONPATH": str(root)})
    if r.returncode:
        print(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}", file=sys.stderr)
        return 1
    out = {"model": args.model, "device": args.device, "shards": len(sizes), "largest_shard_bytes": max(sizes),
           "checkpoint_bytes": sum(sizes), **json.loads(r.stdout)}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
