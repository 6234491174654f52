"""A kernel's phase probe: a diagnostic build stamps the global timer (ns, one clock for every
SM) from thread 0 of each block as it reaches each of its phases, into a (kv heads, programs,
phases) int64 buffer; the build without it is the kernel itself. scripts/attn_phases.py swaps the
fused attention's probe build into the captured step and reads the stamps back.
"""

# The phases the probe build stamps (a block's thread 0, the global timer in ns), in order, and
# the last slot: 1 where the block merged its kv head. "arrived": the block's arrival counted (its
# partials released, the atomic's answer read); "weighed": the merging block's split weights in
# shared memory (its loads of the (max, sum) pairs and first partials back), 0 in other blocks.
# scripts/attn_phases.py reads them.
PROBE_PHASES = ("start", "issued", "dependency", "rope", "scores", "softmax", "values", "arrived", "weighed", "end",
                "merged")
PROBE_PRELUDE = r"""
__device__ __forceinline__ long long tfd_globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return (long long)t;
}
"""


def stamp_macro(T):
    """The tilelang macro that stamps the phase named `name` (of PROBE_PHASES) of block (px, g)."""

    @T.macro
    def stamp(probe, px, g, tx, name):  # thread 0 of a block: the global timer at phase `name`
        if tx == 0:
            probe[g, px, PROBE_PHASES.index(name)] = T.call_extern("int64", "tfd_globaltimer")

    return stamp
