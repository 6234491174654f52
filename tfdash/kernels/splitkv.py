"""The split-KV merge that ends the attention launch: the last split to arrive for a kv head
combines every split's partial output into the head's output, so the merge costs no launch.

Each split wrote, per q head h of the group: its f32 partial output part[h, split, :] and its
softmax's (max, sum) in ml[h, split, :]. The merge weights a split by exp(max - global max) *
sum / global sum (flash-decoding's rescale), and sums the partials with those weights. Arrival is
counted in sem[kv head]: a thread fence, an atomic add, and the block that brings the count to the
number of active splits merges and resets the counter for the next layer's launch.

The grid: a block of the cache is `block` positions; a step at ctx_len uses the first
splits_used(ctx_len) of them, and at most SPLIT_CAP programs per kv head run them (grid_splits).
"""


def splits_used(dims, ctx_len):
    """Blocks of the cache a step at ctx_len attends over (ctx_len + 1 positions)."""
    return -(-(ctx_len + 1) // dims["block"])


SPLIT_CAP = 32  # programs per kv head at most: the grid stops growing with the KV capacity


def grid_splits(S: int, cap: int = SPLIT_CAP) -> tuple[int, int]:
    """(programs per kv head, rounds) for S blocks of the cache: program p handles blocks p,
    p + programs, ... in turn. Up to `cap` blocks that is one block a program; past it the first
    round fills every program and later rounds take the blocks after, so a context that grows
    into the cache keeps all programs busy before any loops, and a larger cache launches no more
    programs (its blocks past the context cost a skipped round)."""
    programs = min(S, cap)
    return programs, -(-S // programs)


MERGE_CHUNK = 16  # partials a thread loads before it multiplies: independent loads in flight


def lanes(S: int) -> tuple[int, int]:
    """(splits a lane holds, splits rounded up to whole warps) for S splits."""
    sper = -(-S // 32)
    return sper, sper * 32


def merge_macro(T, group: int, warps: int, S: int, D: int, dt: str, early: bool = False, acq_rel: bool = False,
                chunk: int = MERGE_CHUNK, stamp=None):
    """The merge as a tilelang macro over the attention kernel's own buffers and indices. `early`:
    the merging block loads the first `chunk` partials of every head before the (max, sum)
    pairs, so both loads are in flight at once rather than one after the other. `acq_rel`: the
    arrival is one acquire-release atomic (after the block's barrier, as CUTLASS's semaphore
    releases) instead of a fence and a relaxed atomic, and the merging block's threads read the
    partials after that acquire and a barrier instead of after fences of their own. `chunk`: the
    partials a thread loads at once (MERGE_CHUNK); with `early` the first chunk is what overlaps
    the (max, sum) loads, so a chunk covering every split leaves no second round trip. `stamp`: the
    probe build's stamp macro (tfdash.kernels.probe), called at "arrived" and "weighed"."""
    sper, S32 = lanes(S)
    MP = -(-group // warps)  # merge-weight passes: one warp per head

    @T.macro
    def merge(ml, part, out, sem, flag_s, w_s, mloc, lloc, pv, g, tx, lane, warp, n_active, probe=None, px=None):
        mm = T.alloc_var("float32")
        ll = T.alloc_var("float32")
        acc = T.alloc_var("float32")
        pre = T.alloc_local((group, chunk), "float32") if early else None
        T.sync_threads()
        if tx == 0:
            if acq_rel:
                flag_s[0] = T.if_then_else(
                    T.atomic_add(sem[g], 1, memory_order="acq_rel", return_prev=True) == n_active - 1, 1, 0)
            else:
                T.evaluate(T.call_extern("handle", "__threadfence"))
                flag_s[0] = T.if_then_else(T.atomic_add(sem[g], 1, return_prev=True) == n_active - 1, 1, 0)
        T.sync_threads()
        if stamp is not None:
            stamp(probe, px, g, tx, "arrived")
        if flag_s[0] == 1:
            if not acq_rel:
                T.evaluate(T.call_extern("handle", "__threadfence"))
            if early:
                for hh in T.unroll(group):
                    for k in T.unroll(chunk):
                        if k < n_active:
                            pre[hh, k] = part[g * group + hh, k, tx]
                        else:
                            pre[hh, k] = 0.0
            # merge weights, one warp per head (warps // group passes): lane l holds
            # splits l, l+32, ...; the global max and sum are warp reductions, the
            # weights go to shared memory
            for mp in T.unroll(MP):
                if mp * warps + warp < group:
                    mm = -T.infinity("float32")
                    for k in T.unroll(sper):
                        if k * 32 + lane < n_active:
                            mloc[k] = ml[g * group + mp * warps + warp, k * 32 + lane, 0]
                            lloc[k] = ml[g * group + mp * warps + warp, k * 32 + lane, 1]
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
            if stamp is not None:
                stamp(probe, px, g, tx, "weighed")
            # out[d] = sum over splits of weight * partial[d]: chunk independent
            # loads in flight per thread, not a chain of dependent ones
            for hh in T.unroll(group):
                acc = 0.0
                for c in T.serial((S + chunk - 1) // chunk):
                    if c * chunk < n_active:
                        for k in T.unroll(chunk):
                            if early and c == 0:
                                pv[k] = pre[hh, k]
                            elif c * chunk + k < n_active:
                                pv[k] = part[g * group + hh, c * chunk + k, tx]
                            else:
                                pv[k] = 0.0
                        for k in T.unroll(chunk):
                            acc += w_s[hh, T.min(c * chunk + k, S32 - 1)] * pv[k]
                out[(g * group + hh) * D + tx] = T.cast(acc, dt)
            if tx == 0:
                sem[g] = 0

    return merge

