"""The token's copy into its pinned ring slot, two ways (SETTINGS.ring_copy):

    torch    `ring[slot:slot+1].copy_(tok, non_blocking=True)`: torch's binding releases the GIL
    cudart   one `cudaMemcpyAsync` of the 4 bytes, called through ctypes.PyDLL, which keeps it

Each GIL release costs the decode thread up to the switch interval to get it back while another
thread (the dashboard's, the CUPTI drain's) is busy, so the cudart copy leaves the graph replay as
a step's only release. It calls the CUDA runtime the process has already loaded (torch's), on the
stream torch enqueues on, so it is ordered after the replay as torch's own copy is.
"""

from __future__ import annotations

import ctypes

import torch

MEMCPY_DEVICE_TO_HOST = 2  # cudaMemcpyKind


def loaded_cudart(maps: str = "/proc/self/maps") -> str | None:
    """The path of the libcudart this process has mapped (torch's), or None."""
    try:
        with open(maps, encoding="utf-8", errors="replace") as f:
            for line in f:
                path = line.rstrip("\n").split(maxsplit=5)[-1]
                if "/libcudart.so" in path:
                    return path
    except OSError:
        return None
    return None


class TorchCopy:
    """`copy(slot)`: tok -> ring[slot] through torch (a non-blocking copy on the current stream)."""

    def __init__(self, tok: torch.Tensor, ring: torch.Tensor):
        self._tok, self._ring = tok, ring

    def __call__(self, slot: int) -> None:
        self._ring[slot:slot + 1].copy_(self._tok, non_blocking=True)


class CudartCopy:
    """`copy(slot)`: tok -> ring[slot] on torch's current stream, the GIL held throughout."""

    def __init__(self, tok: torch.Tensor, ring: torch.Tensor, library: str | None = None):
        if tok.dtype != ring.dtype or tok.numel() != 1 or not ring.is_contiguous() or not ring.is_pinned():
            raise ValueError("the cudart ring copy wants a one-element token and a pinned ring of its dtype")
        path = library or loaded_cudart()
        if path is None:
            raise OSError("no libcudart is loaded in this process")
        fn = ctypes.PyDLL(path).cudaMemcpyAsync
        fn.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p)
        fn.restype = ctypes.c_int
        self._fn, self._tok, self._ring, self._n = fn, tok, ring, tok.element_size()
        self.library = path

    def __call__(self, slot: int) -> None:
        dst = self._ring.data_ptr() + slot * self._n
        rc = self._fn(dst, self._tok.data_ptr(), self._n, MEMCPY_DEVICE_TO_HOST, torch.cuda.current_stream().cuda_stream)
        if rc:
            raise RuntimeError(f"cudaMemcpyAsync into ring slot {slot} returned CUDA error {rc}")


def make_copy(kind: str, tok: torch.Tensor, ring: torch.Tensor) -> tuple[TorchCopy | CudartCopy, str]:
    """(the copy `kind` names, "") where it can be set up, else (torch's, why not)."""
    if kind not in ("torch", "cudart"):
        from tfdash.errors import TfdashError

        raise TfdashError(f"TFDASH_RING_COPY={kind!r}: choose torch or cudart")
    if kind == "torch":
        return TorchCopy(tok, ring), ""
    try:
        return CudartCopy(tok, ring), ""
    except (OSError, AttributeError, ValueError) as e:
        return TorchCopy(tok, ring), f"the ring copy stays torch's: {e}"
