"""The split-KV merge without an arrival: program 0 of each kv head merges, polling the partials.

The default merge (tfdash.kernels.splitkv) counts arrivals: every split's block fences its
partials out, adds one to its kv head's counter with an atomic, and the block whose add completes
the count loads every partial and merges. That is three dependent trips to L2 after the last
split's values (fence, atomic, loads). Here no block counts:

    write   every split stores its partials and its (max, sum) pair as ~bits(value) (`encode`):
            a word whose bits are 0 has not been written this launch, since ~bits(v) is 0 only for
            the NaN whose every bit is set, which no f32 arithmetic returns
    poll    program 0 of the kv head, after its own split(s), loads the (max, sum) pairs and then
            the partials with relaxed loads through L2, again while any word it needs is 0, so a
            partial is read as it lands rather than one trip after an arrival is counted
    merge   the same weights and sums in the same order as the default merge: the same bits
    reset   it stores 0 into every word it read, so the next launch (the next layer's, which runs
            after this grid has completed) finds them unwritten again; the scratch starts zeroed

Every other block stores and exits: none waits on another, so program 0's wait always ends. Its
scratch is its own (the plan names it apart), since another plan's kernels leave values in theirs.
"""

# The relaxed loads program 0 polls with, and the encoding of a stored word (CUDA helpers of the
# kernel's prelude): `tfd_poll<N>` fills out[k] with the decoded word p[k * stride] for k < n
# (0.0 past n), loading again while any of them is unwritten; `tfd_poll_ml<N>` the (max, sum) pairs
# of splits lane, lane + 32, ... below n (-inf and 0 past n, as the default merge holds them);
# `tfd_poll_merge<G, NP, NM>` both in one loop, the first NP partials of G heads and (has_ml) the pairs.
POLL_PRELUDE = r"""
__device__ __forceinline__ float tfd_encode(float v) { return __uint_as_float(~__float_as_uint(v)); }
__device__ __forceinline__ unsigned tfd_ld_relaxed(const float* p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
template <int N>
__device__ __forceinline__ void tfd_poll(const float* p, int stride, int n, float* out) {
  unsigned v[N];
  bool missing;
  do {
#pragma unroll
    for (int k = 0; k < N; ++k) v[k] = k < n ? tfd_ld_relaxed(p + k * stride) : ~0u;
    missing = false;
#pragma unroll
    for (int k = 0; k < N; ++k) missing |= v[k] == 0u;
  } while (missing);
#pragma unroll
  for (int k = 0; k < N; ++k) out[k] = __uint_as_float(~v[k]);
}
template <int G, int NP, int NM>
__device__ __forceinline__ void tfd_poll_merge(const float* part, int head_stride, int stride, int n, const float* ml,
                                               int lane, bool has_ml, float* pv, float* m, float* l) {
  unsigned v[G * NP], a[NM], b[NM];
  bool missing;
  do {
#pragma unroll
    for (int h = 0; h < G; ++h)
#pragma unroll
      for (int k = 0; k < NP; ++k) v[h * NP + k] = k < n ? tfd_ld_relaxed(part + h * head_stride + k * stride) : ~0u;
#pragma unroll
    for (int k = 0; k < NM; ++k) {
      int s = k * 32 + lane;
      a[k] = has_ml && s < n ? tfd_ld_relaxed(ml + 2 * s) : ~0u;
      b[k] = has_ml && s < n ? tfd_ld_relaxed(ml + 2 * s + 1) : ~0u;
    }
    missing = false;
#pragma unroll
    for (int i = 0; i < G * NP; ++i) missing |= v[i] == 0u;
#pragma unroll
    for (int k = 0; k < NM; ++k) missing |= (a[k] == 0u) | (b[k] == 0u);
  } while (missing);
#pragma unroll
  for (int i = 0; i < G * NP; ++i) pv[i] = __uint_as_float(~v[i]);
#pragma unroll
  for (int k = 0; k < NM; ++k) {
    m[k] = k * 32 + lane < n ? __uint_as_float(~a[k]) : -INFINITY;
    l[k] = k * 32 + lane < n ? __uint_as_float(~b[k]) : 0.0f;
  }
}
template <int N>
__device__ __forceinline__ void tfd_poll_ml(const float* ml, int lane, int n, float* m, float* l) {
  unsigned a[N], b[N];
  bool missing;
  do {
#pragma unroll
    for (int k = 0; k < N; ++k) {
      int s = k * 32 + lane;
      a[k] = s < n ? tfd_ld_relaxed(ml + 2 * s) : ~0u;
      b[k] = s < n ? tfd_ld_relaxed(ml + 2 * s + 1) : ~0u;
    }
    missing = false;
#pragma unroll
    for (int k = 0; k < N; ++k) missing |= (a[k] == 0u) | (b[k] == 0u);
  } while (missing);
#pragma unroll
  for (int k = 0; k < N; ++k) {
    m[k] = k * 32 + lane < n ? __uint_as_float(~a[k]) : -INFINITY;
    l[k] = k * 32 + lane < n ? __uint_as_float(~b[k]) : 0.0f;
  }
}
"""


def encoder(T, poll: bool):
    """What a split stores for an f32 value: ~bits(value) where the merge polls, else the value."""
    if not poll:
        return lambda v: v
    return lambda v: T.call_extern("float32", "tfd_encode", v)


# q heads per kv head at most for one poll of the pairs and the first chunk of every head's partials
# (group x chunk words in registers, as the default's early merge holds them); larger groups poll
# the pairs, then each head's partials
TOGETHER_GROUP = 2


def merge_poll_macro(T, group: int, warps: int, S: int, D: int, dt: str, chunk: int, stamp=None):
    """The polling merge as a tilelang macro over the attention kernel's buffers (see the module's
    docstring); program 0 calls it once its last round is done. Up to TOGETHER_GROUP q heads a kv
    head, one loop polls the (max, sum) pairs and the first `chunk` partials of every head, so
    they are read as they land, together. `stamp`: the probe build's stamp macro, at "weighed"
    (the split weights in shared memory)."""
    from tfdash.kernels.splitkv import lanes

    sper, S32 = lanes(S)
    MP = -(-group // warps)  # merge-weight passes: one warp per head
    together = group <= TOGETHER_GROUP and MP == 1

    @T.macro
    def merge(ml, part, out, w_s, mloc, lloc, pv, g, tx, lane, warp, n_active, probe=None, px=None):
        mm = T.alloc_var("float32")
        ll = T.alloc_var("float32")
        acc = T.alloc_var("float32")
        pre = T.alloc_local((group, chunk), "float32") if together else None
        if together:  # warp w < group polls head w's pairs beside every thread's first partials
            T.evaluate(T.call_extern(
                "handle", f"tfd_poll_merge<{group}, {chunk}, {sper}>", T.address_of(part[g * group, 0, tx]), S * D, D,
                n_active, T.address_of(ml[g * group + T.min(warp, group - 1), 0, 0]), lane, warp < group,
                T.address_of(pre[0, 0]), T.address_of(mloc[0]), T.address_of(lloc[0])))
        for mp in T.unroll(MP):
            if mp * warps + warp < group:
                h = g * group + mp * warps + warp
                if not together:
                    T.evaluate(T.call_extern("handle", f"tfd_poll_ml<{sper}>", T.address_of(ml[h, 0, 0]), lane,
                                             n_active, T.address_of(mloc[0]), T.address_of(lloc[0])))
                for k in T.unroll(sper):  # read: unwritten again for the next launch
                    if k * 32 + lane < n_active:
                        ml[h, k * 32 + lane, 0] = 0.0
                        ml[h, k * 32 + lane, 1] = 0.0
                mm = -T.infinity("float32")
                for k in T.unroll(sper):
                    mm = T.max(mm, mloc[k])
                mm = T.warp_reduce_max(mm)
                ll = 0.0
                for k in T.unroll(sper):
                    mloc[k] = T.exp(mloc[k] - mm)  # 0 for the splits past n_active
                    ll += mloc[k] * lloc[k]
                ll = T.warp_reduce_sum(ll)
                for k in T.unroll(sper):
                    w_s[mp * warps + warp, k * 32 + lane] = mloc[k] / ll
        T.sync_threads()
        if stamp is not None:
            stamp(probe, px, g, tx, "weighed")
        for hh in T.unroll(group):
            acc = 0.0
            for c in T.serial((S + chunk - 1) // chunk):
                if c * chunk < n_active:
                    if together and c == 0:
                        for k in T.unroll(chunk):
                            pv[k] = pre[hh, k]
                    else:
                        T.evaluate(T.call_extern("handle", f"tfd_poll<{chunk}>",
                                                 T.address_of(part[g * group + hh, T.min(c * chunk, S - 1), tx]), D,
                                                 n_active - c * chunk, T.address_of(pv[0])))
                    for k in T.unroll(chunk):
                        acc += w_s[hh, T.min(c * chunk + k, S32 - 1)] * pv[k]
                    for k in T.unroll(chunk):  # read: unwritten again for the next launch
                        if c * chunk + k < n_active:
                            part[g * group + hh, c * chunk + k, tx] = 0.0
            out[(g * group + hh) * D + tx] = T.cast(acc, dt)

    return merge
