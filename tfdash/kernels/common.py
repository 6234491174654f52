"""Torch helpers shared by the torch spellings: HF Qwen3's RMSNorm and the f32-output GEMV."""

import torch


def rmsnorm(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    """transformers' Qwen3RMSNorm: normalise in f32, round to the input dtype, then scale by w
    in that dtype (two roundings in bf16, exactly as HF does)."""
    x32 = x.float()
    var = x32.pow(2).mean(-1, keepdim=True)
    return w * (x32 * torch.rsqrt(var + eps)).to(x.dtype)


def linear_f32(h: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """w @ h with an f32 result. On CUDA, cuBLAS accumulates bf16 in f32 and keeps it; elsewhere
    the product is rounded to w's dtype first (only bf16 CPU runs see that rounding)."""
    if w.dtype == torch.float32:
        return torch.nn.functional.linear(h.float(), w)
    if w.is_cuda:
        try:
            return torch.mm(w, h.view(-1, 1), out_dtype=torch.float32).view(-1)
        except (RuntimeError, TypeError):
            pass
    return torch.nn.functional.linear(h, w).float()
