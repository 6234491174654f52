"""L2 prefetch of later launches' weights, issued by a latency-bound launch.

At batch 1 the attention launch is a chain of dependent phases (rope, scores, softmax, merge)
that reads a few MB of cache while DRAM idles, and the GEMV after it cannot start streaming its
weights until its blocks fit beside attention's on the SMs. A launch that carries a prefetch asks
the L2 to fetch the first bytes of the weights read after it (the plan names them, in the order
they are read: this layer's gate|up, then its down), so those launches find them in L2 rather
than in DRAM. A prefetch has no effect on any value: the torch spelling
of the launch is unchanged, and the analyzer keeps each weight's bytes on the launch that reads
it. Weights depend on no kernel, so the prefetch is issued before the grid dependency.

Each prefetch is one `cp.async.bulk.prefetch.L2` of a whole weight row (sm_90), issued by one
thread: thread t of block b takes rows t * blocks + b, plus multiples of the grid's threads, of
the targets' rows taken together.
"""

PRELUDE = r"""
__device__ __forceinline__ void tfdash_prefetch_l2(const void* p, unsigned bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"(p), "r"(bytes) : "memory");
}
"""

MB = 1 << 20


def targets(budget_bytes: int, shapes, es: int) -> tuple[tuple[int, int, int], ...]:
    """(N, K, rows prefetched) of each target weight (N rows of K elements of es bytes), in order,
    until `budget_bytes` are taken: whole rows, the target where the budget ends cut short and any
    after it at 0 rows."""
    out, left = [], budget_bytes
    for N, K in shapes:
        rows = max(0, min(N, left // (K * es)))
        out.append((N, K, rows))
        left -= rows * K * es
    return tuple(out)


def prefetch_macro(T, plan_targets, threads: int, blocks: int, es: int):
    """A macro issuing the L2 prefetch of `plan_targets` ((N, K, rows) per weight, as `targets`
    gives, weights of `es` bytes an element) from a grid of `blocks` blocks of `threads` threads:
    `wa` and `wb` are the first and second target weights, `flat` the block's index in the grid,
    `tx` the thread's in its block."""
    total = blocks * threads
    starts = []
    acc = 0
    for _, _, rows in plan_targets:
        starts.append(acc)
        acc += rows
    rounds = -(-acc // total) if total else 0

    @T.macro
    def prefetch(wa, wb, flat, tx):
        ws = (wa, wb)
        for rd in T.unroll(rounds):
            i = rd * total + tx * blocks + flat  # consecutive rows on different blocks (SMs)
            for t, (N, K, rows) in enumerate(plan_targets):
                if rows and starts[t] <= i and i < starts[t] + rows:
                    T.evaluate(T.call_extern("handle", "tfdash_prefetch_l2",
                                             T.address_of(ws[t][i - starts[t], 0]), K * es))

    return prefetch
