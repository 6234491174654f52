"""Kernel families: one file each, holding the tilelang factory, the torch spelling it is checked
against, and its cost model. Importing this package registers every family in `FAMILIES`.

Nothing here imports tilelang at import time: factories import it when called, so the package
loads on machines without it (macOS, CPU-only CI images without nvcc).
"""

from tfdash.kernels import (argmax, attention, embed, gemv, lm_head_pick, lm_head_q8, rope, rows,  # noqa: F401
                            rows_attention)
from tfdash.kernels.base import FAMILIES, Cost, Family, Operand, family

__all__ = ["FAMILIES", "Cost", "Family", "Operand", "family"]
