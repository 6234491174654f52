"""The split-KV merge with tagged partials (the attention's `tagged` build, a variant to A/B).

The default merge (tfdash.kernels.splitkv) orders a split's partials before its arrival: the
block's barrier, then one acquire-release atomic, whose release waits until the block's stores
are visible; the last to arrive then loads the other splits' partials. Here every partial value
and every (max, sum) entry is stored as one 64-bit word holding the value's f32 bits and a tag,
the launch's epoch for its kv head. A reader that sees the tag knows that word is this launch's,
whatever order the stores landed in, so:

- a split arrives with a relaxed atomic after its barrier: no fence waits for its stores;
- the last to arrive checks each word it loaded and loads again only the ones still stale (a
  store of a block that has arrived lands soon; the loop ends);
- `speculate`: every block loads the other splits' first partials before it knows whether it is
  last, beside its arrival, so the last one has them when its atomic returns (the blocks that are
  not last only read L2 for nothing).

The epoch of kv head g is sem[n_kv + g] (sem holds the arrival counts, then the epochs): every
block of the launch reads it after the grid dependency, tags with epoch + 1, and the merging block
stores epoch + 1 (and resets the arrival count) for the next launch of any layer, so no two
launches share a tag until the 32-bit count wraps. Scratch starts zeroed, and the count skips 0
and -1 (the tests' poison), so neither is ever a launch's tag.
"""

from tfdash.kernels.splitkv import lanes

# 64-bit relaxed accesses at GPU scope are single-copy atomic: the value and its tag travel together
TAG_PRELUDE = r"""
__device__ __forceinline__ void tfd_st_tag(int64_t* p, float v, int tag) {
  unsigned long long x = ((unsigned long long)(unsigned)tag << 32) | __float_as_uint(v);
  asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" :: "l"(p), "l"(x) : "memory");
}
__device__ __forceinline__ int64_t tfd_ld_tag(const int64_t* p) {
  unsigned long long x;
  asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(x) : "l"(p) : "memory");
  return (int64_t)x;
}
// the f32 value of the word at p whose tag is `tag`: `first` (a word loaded from p before), or p
// loaded again until it is; the store of a block that has arrived lands, so the loop ends
__device__ __forceinline__ float tfd_fresh(const int64_t* p, int64_t first, int tag) {
  unsigned long long x = (unsigned long long)first;
  while ((unsigned)(x >> 32) != (unsigned)tag) {
    asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(x) : "l"(p) : "memory");
  }
  return __uint_as_float((unsigned)x);
}
// this launch's tag from its kv head's epoch: epoch + 1 in unsigned arithmetic, never the 0 of
// zeroed scratch or the -1 of the tests' poison (past them it wraps to 1)
__device__ __forceinline__ int tfd_next_tag(const int* epoch) {
  unsigned t = (unsigned)__ldcg(epoch) + 1u;
  return (int)(t == 0u || t == 0xffffffffu ? 1u : t);
}
"""


def store_tagged(T, dst, value, tag):
    """dst (an element of an int64 buffer) = value's f32 bits tagged with `tag`, one relaxed store."""
    return T.evaluate(T.call_extern("handle", "tfd_st_tag", T.address_of(dst), value, tag))


def load_tagged(T, src):
    """The 64-bit word at src (an element of an int64 buffer), one relaxed load at GPU scope."""
    return T.call_extern("int64", "tfd_ld_tag", T.address_of(src))


def fresh(T, src, first, tag):
    """The f32 value at src once its tag is `tag`, from `first` (src's word loaded before)."""
    return T.call_extern("float32", "tfd_fresh", T.address_of(src), first, tag)


def epoch_tag(T, sem, n_kv: int, g):
    """This launch's tag for kv head g: its epoch + 1 (tfd_next_tag), read through L2 (the last
    launch's merger wrote it)."""
    return T.call_extern("int32", "tfd_next_tag", T.address_of(sem[n_kv + g]))


def tagged_merge_macro(T, group: int, n_kv: int, warps: int, S: int, D: int, dt: str, chunk: int, speculate: bool):
    """splitkv.merge_macro's merge over tagged words (part and ml int64, tag = the launch's epoch
    + 1 for kv head g): arrival by a relaxed atomic after the block's barrier, each word loaded
    again until its tag is this launch's, the same sums in the same order as the early merge."""
    sper, S32 = lanes(S)
    MP = -(-group // warps)  # merge-weight passes: one warp per head

    @T.macro
    def merge(ml, part, out, sem, flag_s, w_s, mloc, lloc, pv, g, tx, lane, warp, n_active, tag):
        mm = T.alloc_var("float32")
        ll = T.alloc_var("float32")
        acc = T.alloc_var("float32")
        pre = T.alloc_local((group, chunk), "int64")
        mw = T.alloc_local((sper,), "int64")
        lw = T.alloc_local((sper,), "int64")
        T.sync_threads()  # every thread's tagged stores issued (visible when their tags say so)
        if speculate:  # the first partials, before this block knows it is last
            for hh in T.unroll(group):
                for k in T.unroll(chunk):
                    if k < n_active:
                        pre[hh, k] = load_tagged(T, part[g * group + hh, T.min(k, S - 1), tx])
        if tx == 0:
            flag_s[0] = T.if_then_else(T.atomic_add(sem[g], 1, return_prev=True) == n_active - 1, 1, 0)
        T.sync_threads()
        if flag_s[0] == 1:
            if not speculate:
                for hh in T.unroll(group):
                    for k in T.unroll(chunk):
                        if k < n_active:
                            pre[hh, k] = load_tagged(T, part[g * group + hh, T.min(k, S - 1), tx])
            # merge weights, one warp per head: lane l holds splits l, l+32, ... (splitkv's sums,
            # written out again: a macro cannot rebind the caller's mm and ll, and the default's
            # build stays as it was measured)
            for mp in T.unroll(MP):
                if mp * warps + warp < group:
                    for k in T.unroll(sper):  # every (max, sum) word in flight before any is checked
                        if k * 32 + lane < n_active:
                            mw[k] = load_tagged(T, ml[g * group + mp * warps + warp, T.min(k * 32 + lane, S - 1), 0])
                            lw[k] = load_tagged(T, ml[g * group + mp * warps + warp, T.min(k * 32 + lane, S - 1), 1])
                    mm = -T.infinity("float32")
                    for k in T.unroll(sper):
                        if k * 32 + lane < n_active:
                            mloc[k] = fresh(
                                T, ml[g * group + mp * warps + warp, T.min(k * 32 + lane, S - 1), 0], mw[k], tag)
                            lloc[k] = fresh(
                                T, ml[g * group + mp * warps + warp, T.min(k * 32 + lane, S - 1), 1], lw[k], tag)
                        else:
                            mloc[k] = -T.infinity("float32")
                            lloc[k] = 0.0
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
            for hh in T.unroll(group):
                acc = 0.0
                for c in T.serial((S + chunk - 1) // chunk):  # split index clamped: an address is
                    if c * chunk < n_active:  # taken only of a load provably in bounds
                        if c > 0:  # the chunk's words in flight before any is checked
                            for k in T.unroll(chunk):
                                if c * chunk + k < n_active:
                                    pre[hh, k] = load_tagged(T, part[g * group + hh, T.min(c * chunk + k, S - 1), tx])
                        for k in T.unroll(chunk):
                            if c * chunk + k < n_active:
                                pv[k] = fresh(T, part[g * group + hh, T.min(c * chunk + k, S - 1), tx], pre[hh, k], tag)
                            else:
                                pv[k] = 0.0
                        for k in T.unroll(chunk):
                            acc += w_s[hh, T.min(c * chunk + k, S32 - 1)] * pv[k]
                out[(g * group + hh) * D + tx] = T.cast(acc, dt)
            if tx == 0:
                sem[g] = 0
                sem[n_kv + g] = tag  # the epoch: the next launch (of any layer) tags with tag + 1

    return merge
