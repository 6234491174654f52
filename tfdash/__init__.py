"""tfdash: a terminal dashboard for batch-1 LLM decode on NVIDIA H200.

The headless core lives in `tfdash.engine` (model, weights, step plan, runtimes, decode loop),
`tfdash.kernels` (one file per kernel family: tilelang factory, torch spelling, cost model) and
`tfdash.profiling` (analysis, timing, NVML, snapshots). `tfdash.app` is the Textual UI; nothing
in the core imports it.
"""

__version__ = "0.1.0"
