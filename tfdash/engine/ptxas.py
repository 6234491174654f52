"""What ptxas says of a kernel's CUDA source built for sm_90a: registers a thread, spills, stack
and static shared memory. These are the compiler's facts, readable on any host with nvcc (no GPU):
a GEMV that needs more registers than its planned blocks per SM allow runs its grid in waves.

    resource_usage(cuda_source) -> Resources(registers=84, spill_stores=0, spill_loads=0, ...)
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

TIMEOUT_S = 300


@dataclass(frozen=True)
class Resources:
    registers: int  # a thread
    spill_stores: int  # bytes
    spill_loads: int  # bytes
    stack: int  # bytes of stack frame
    static_smem: int  # bytes; tilelang's buffers are mostly dynamic shared memory, not counted here

    def line(self) -> str:
        spills = ("no spills" if not (self.spill_stores or self.spill_loads)
                  else f"spills {self.spill_stores} B stored, {self.spill_loads} B loaded")
        return (f"ptxas sm_90a: {self.registers} registers a thread, {spills}, {self.stack} B stack, "
                f"{self.static_smem} B static shared memory")


def build_cubin(src: str, cubin: Path) -> str:
    """Build `src` (a tilelang kernel's CUDA) to `cubin` for sm_90a against tilelang's headers, as
    tilelang builds it (-O3); return ptxas -v's report. Raises RuntimeError with one line
    when nvcc is missing or fails."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise RuntimeError("nvcc is not on PATH (the CUDA toolkit reports registers and spills)")
    import tilelang

    root = Path(tilelang.__file__).parent
    cu = Path(cubin).with_suffix(".cu")
    cu.write_text(src)
    r = subprocess.run([nvcc, "-arch=sm_90a", "-cubin", "-O3", "-std=c++17", f"-I{root / 'src'}",
                        f"-I{root / '3rdparty' / 'cutlass' / 'include'}", "-Xptxas", "-v", "-o", str(cubin), str(cu)],
                       capture_output=True, text=True, timeout=TIMEOUT_S)
    text = r.stdout + r.stderr
    if r.returncode != 0:
        raise RuntimeError(f"nvcc failed: {(text.strip().splitlines() or ['no output'])[-1][:200]}")
    return text


def resource_usage(src: str) -> Resources:
    """ptxas's registers, spills, stack and static shared memory for `src` built for sm_90a."""
    with tempfile.TemporaryDirectory() as d:
        return parse(build_cubin(src, Path(d) / "k.cubin"))


def parse(text: str) -> Resources:
    """ptxas -v's lines for the (largest) kernel in `text`."""
    used = [(int(m.group(1)), int(m.group(2) or 0)) for m in
            re.finditer(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?", text)]
    if not used:
        raise RuntimeError("ptxas reported no register count")
    frame = [tuple(int(x) for x in m.groups()) for m in
             re.finditer(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", text)]
    regs, smem = max(used)
    stack, stores, loads = max(frame) if frame else (0, 0, 0)
    return Resources(regs, stores, loads, stack, smem)
