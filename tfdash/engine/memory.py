"""Will it fit? The weights and the KV cache a run needs, against the memory free on its device,
checked before anything is allocated, so a run too large is one line naming the sizes rather
than an allocator's traceback or the kernel's out-of-memory killer. And where a runtime's small
state goes (`carve`)."""

from __future__ import annotations

import math

from tfdash.engine.config import ModelConfig
from tfdash.errors import CapacityError, ConfigError

ITEMSIZE = {"bfloat16": 2, "float16": 2, "float32": 4}
GIB = float(1 << 30)
PAGE = 1 << 21  # the driver maps device memory in 2 MiB pages
GRANULE = 512  # the caching allocator's own alignment, which the kernels' vector loads may rely on


def carve(specs, device, align=4096):
    """Zeroed tensors for `specs` ({name: (shape, torch dtype)}), laid out in their order, each at a
    multiple of `align` bytes, in one allocation that starts on a 2 MiB page boundary on a GPU. A
    step's small state (activations, tables, partials and counters, under 2 MiB at 1.7B) then lands
    at the same offsets in every process and runtime instead of wherever the caching allocator's
    free blocks happen to be."""
    import torch

    if align <= 0 or align % GRANULE:
        raise ConfigError(f"TFDASH_STATE_ARENA={align}: want 0 (no arena) or a multiple of {GRANULE} bytes, the "
                          "caching allocator's own granule, which the kernels' vector loads may rely on")
    if not specs:
        return {}
    dev = torch.device(device)
    spans, total = {}, 0  # name -> (offset, bytes)
    for name, (shape, dtype) in specs.items():
        spans[name] = (total, math.prod(shape) * dtype.itemsize)
        total += -(-spans[name][1] // align) * align
    pad = PAGE if dev.type == "cuda" else 0
    raw = torch.zeros(total + pad, dtype=torch.uint8, device=dev)
    start = (-raw.data_ptr()) % PAGE if pad else 0
    return {name: raw[start + at:start + at + nbytes].view(dtype).view(shape)
            for (name, (shape, dtype)), (at, nbytes) in zip(specs.items(), spans.values())}


def kv_bytes(cfg: ModelConfig, capacity: int, dtype: str) -> int:
    """K and V for every layer over `capacity` positions."""
    return 2 * cfg.num_layers * capacity * cfg.kv_size * ITEMSIZE.get(dtype, 4)


def weight_bytes(cfg: ModelConfig, dtype: str) -> int:
    return cfg.param_count() * ITEMSIZE.get(dtype, 4)


def free_bytes(device: str) -> int | None:
    """Memory free on `device` (MemAvailable on the host, cudaMemGetInfo on a GPU); None if unknown."""
    try:
        if device.startswith("cuda"):
            import torch

            return int(torch.cuda.mem_get_info()[0])
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, RuntimeError, IndexError):
        return None
    return None


def check_fits(cfg: ModelConfig, capacity: int, dtype: str, device: str, available: int | None = None,
               derived: int = 0) -> None:
    """CapacityError with one line when the weights plus the KV cache exceed the free memory.
    `derived`: bytes of the weights a runtime makes from its own (the plan's `derived_bytes`)."""
    free = free_bytes(device) if available is None else available
    if free is None:
        return
    w, kv = weight_bytes(cfg, dtype), kv_bytes(cfg, capacity, dtype)
    if w + derived + kv > free:
        bf16 = weight_bytes(cfg, "bfloat16") + derived + kv_bytes(cfg, capacity, "bfloat16")
        made = f", the copies made from them ({derived / GIB:.2f} GiB)" if derived else ""
        raise CapacityError(f"the weights ({w / GIB:.2f} GiB){made} and the KV cache for {capacity:,} positions "
                            f"({kv / GIB:.2f} GiB, {dtype}) need {(w + derived + kv) / GIB:.2f} GiB; {device} has "
                            f"{free / GIB:.2f} GiB free ({_remedy(w + derived > free, capacity, dtype, bf16 <= free)})")


def _remedy(weights_alone: bool, capacity: int, dtype: str, bf16_fits: bool = False) -> str:
    """What makes a run fit: a shorter cache only where the cache is what does not fit and a shorter
    run shrinks it (below LEAST_CAPACITY positions it does not); bfloat16 only where the run would
    fit in it (`bf16_fits`: the weights and the cache at bfloat16's bytes, the copies made from the
    weights as they are)."""
    smaller = "a smaller --model" + (" or --dtype bfloat16" if dtype == "float32" and bf16_fits else "")
    if weights_alone:
        return f"the weights alone do not fit: {smaller}"
    from tfdash.engine.limits import LEAST_CAPACITY

    return "lower --max-new-tokens or the prompt" if capacity > LEAST_CAPACITY else smaller


def allocation_error(e: BaseException, cfg: ModelConfig, capacity: int, dtype: str, device: str,
                     derived: int = 0) -> CapacityError:
    """An allocator's failure as one line naming what was asked for."""
    need = weight_bytes(cfg, dtype) + derived + kv_bytes(cfg, capacity, dtype)
    first = str(e).splitlines()[0][:160] if str(e) else type(e).__name__
    return CapacityError(f"cannot allocate the engine on {device}: weights and KV cache for {capacity:,} "
                         f"positions need {need / GIB:.2f} GiB ({first})")
