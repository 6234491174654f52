"""The token's copy into its pinned ring slot, three ways (SETTINGS.ring_copy):

    torch    `ring[slot:slot+1].copy_(tok, non_blocking=True)`: torch's binding releases the GIL
    cudart   one `cudaMemcpyAsync` of the 4 bytes, called through ctypes.PyDLL, which keeps it
    kernel   an elementwise kernel stores the token into the ring through the ring's device
             address (pinned memory is mapped into the device's address space), so no copy
             engine carries it: the 4-byte device-to-host copy costs a step far more than its
             size (scripts/step_boundary.py measures it)

Each GIL release costs the decode thread up to the switch interval to get it back while another
thread (the dashboard's, the CUPTI drain's) is busy, so the cudart copy leaves the graph replay as
a step's only release. It calls the CUDA runtime the process has already loaded (torch's), on the
stream torch enqueues on, so it is ordered after the replay as torch's own copy is; so are the
others.
"""

from __future__ import annotations

import ctypes

from tfdash.settings import RING_COPIES

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

    def __init__(self, tok, ring):
        self._tok, self._ring = tok, ring

    def __call__(self, slot: int) -> None:
        self._ring[slot:slot + 1].copy_(self._tok, non_blocking=True)


class CudartCopy:
    """`copy(slot)`: tok -> ring[slot] on torch's current stream, the GIL held throughout."""

    def __init__(self, tok, ring, library: str | None = None):
        import torch

        if tok.dtype != ring.dtype or tok.numel() != 1 or not ring.is_contiguous() or not ring.is_pinned():
            raise ValueError("the cudart ring copy wants a one-element token and a pinned ring of its dtype")
        path = library or loaded_cudart()
        if path is None:
            raise OSError("no libcudart is loaded in this process")
        fn = ctypes.PyDLL(path).cudaMemcpyAsync
        fn.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p)
        fn.restype = ctypes.c_int
        self._fn, self._tok, self._ring, self._n = fn, tok, ring, tok.element_size()
        self._stream, self.library = torch.cuda.current_stream, path

    def __call__(self, slot: int) -> None:
        dst = self._ring.data_ptr() + slot * self._n
        rc = self._fn(dst, self._tok.data_ptr(), self._n, MEMCPY_DEVICE_TO_HOST, self._stream().cuda_stream)
        if rc:
            raise RuntimeError(f"cudaMemcpyAsync into ring slot {slot} returned CUDA error {rc}")


class _Mapped:
    """A pinned host tensor as a CUDA array (`__cuda_array_interface__`): under unified addressing
    a pinned host block has the same address on the device."""

    def __init__(self, ring):
        self.__cuda_array_interface__ = {"shape": tuple(ring.shape), "typestr": ring.numpy().dtype.str,
                                         "data": (ring.data_ptr(), False), "strides": None, "version": 3}


def device_view(ring, device):
    """A CUDA tensor over the pinned `ring`'s memory: a kernel's stores into it land in host memory
    (the caller keeps `ring` alive as long as the view)."""
    import torch

    if not ring.is_pinned() or not ring.is_contiguous():
        raise ValueError("a device view wants a pinned, contiguous host tensor")
    return torch.as_tensor(_Mapped(ring), device=device)


class KernelCopy:
    """`copy(slot)`: tok -> ring[slot] by an elementwise kernel on torch's current stream that
    stores into the ring's device address (PCIe writes from the SMs, not a copy-engine transfer)."""

    def __init__(self, tok, ring):
        import torch

        if tok.dtype != ring.dtype or tok.numel() != 1 or not ring.is_contiguous() or not ring.is_pinned():
            raise ValueError("the kernel ring copy wants a one-element token and a pinned ring of its dtype")
        if tok.device.type != "cuda":
            raise ValueError("the kernel ring copy wants the token on a CUDA device")
        self._tok, self._ring = tok, ring  # the ring stays referenced: the mapped view does not own it
        self._mapped = device_view(ring, tok.device)
        self._mul = torch.mul

    def __call__(self, slot: int) -> None:
        self._mul(self._tok, 1, out=self._mapped[slot:slot + 1])


def make_copy(kind: str, tok, ring):
    """(the copy `kind` names, "") where it can be set up, else (torch's, why not)."""
    if kind not in RING_COPIES:
        from tfdash.errors import TfdashError

        raise TfdashError(f"TFDASH_RING_COPY={kind!r}: choose {', '.join(RING_COPIES)}")
    if kind == "torch":
        return TorchCopy(tok, ring), ""
    try:
        return (CudartCopy if kind == "cudart" else KernelCopy)(tok, ring), ""
    except (OSError, AttributeError, ValueError, RuntimeError, TypeError) as e:
        return TorchCopy(tok, ring), f"the ring copy stays torch's: {e}"
