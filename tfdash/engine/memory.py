"""Will it fit? The weights and the KV cache a run needs, against the memory free on its device,
checked before anything is allocated, so a run too large is one line naming the sizes rather
than an allocator's traceback or the kernel's out-of-memory killer."""

from __future__ import annotations

from tfdash.engine.config import ModelConfig
from tfdash.errors import CapacityError

ITEMSIZE = {"bfloat16": 2, "float16": 2, "float32": 4}
GIB = float(1 << 30)


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


def check_fits(cfg: ModelConfig, capacity: int, dtype: str, device: str, available: int | None = None) -> None:
    """CapacityError with one line when the weights plus the KV cache exceed the free memory."""
    free = free_bytes(device) if available is None else available
    if free is None:
        return
    w, kv = weight_bytes(cfg, dtype), kv_bytes(cfg, capacity, dtype)
    if w + kv > free:
        raise CapacityError(f"the weights ({w / GIB:.2f} GiB) and the KV cache for {capacity:,} positions "
                            f"({kv / GIB:.2f} GiB, {dtype}) need {(w + kv) / GIB:.2f} GiB; {device} has "
                            f"{free / GIB:.2f} GiB free (lower --max-new-tokens or the prompt)")


def allocation_error(e: BaseException, cfg: ModelConfig, capacity: int, dtype: str, device: str) -> CapacityError:
    """An allocator's failure as one line naming what was asked for."""
    need = weight_bytes(cfg, dtype) + kv_bytes(cfg, capacity, dtype)
    first = str(e).splitlines()[0][:160] if str(e) else type(e).__name__
    return CapacityError(f"cannot allocate the engine on {device}: weights and KV cache for {capacity:,} "
                         f"positions need {need / GIB:.2f} GiB ({first})")
