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


def merge_macro(T, group: int, warps: int, S: int, D: int, dt: str, early: bool = False, acq_rel: bool = False):
    """The merge as a tilelang macro over the attention kernel's own buffers and indices. `early`:
    the merging block loads the first MERGE_CHUNK partials of every head before the (max, sum)
    pairs, so both loads are in flight at once rather than one after the other. `acq_rel`: the
    arrival is one acquire-release atomic (after the block's barrier, as CUTLASS's semaphore
    releases) instead of a fence and a relaxed atomic, and the merging block's threads read the
    partials after that acquire and a barrier instead of after fences of their own."""
    sper, S32 = lanes(S)
    MP = -(-group // warps)  # merge-weight passes: one warp per head

    @T.macro
    def merge(ml, part, out, sem, flag_s, w_s, mloc, lloc, pv, g, tx, lane, warp, n_active):
        mm = T.alloc_var("float32")
        ll = T.alloc_var("float32")
        acc = T.alloc_var("float32")
        pre = T.alloc_local((group, MERGE_CHUNK), "float32") if early else None
        T.sync_threads()
        if tx == 0:
            if acq_rel:
                flag_s[0] = T.if_then_else(
                    T.atomic_add(sem[g], 1, memory_order="acq_rel", return_prev=True) == n_active - 1, 1, 0)
            else:
                T.evaluate(T.call_extern("handle", "__threadfence"))
                flag_s[0] = T.if_then_else(T.atomic_add(sem[g], 1, return_prev=True) == n_active - 1, 1, 0)
        T.sync_threads()
        if flag_s[0] == 1:
            if not acq_rel:
                T.evaluate(T.call_extern("handle", "__threadfence"))
            if early:
                for hh in T.unroll(group):
                    for k in T.unroll(MERGE_CHUNK):
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
            # out[d] = sum over splits of weight * partial[d]: MERGE_CHUNK independent
            # loads in flight per thread, not a chain of dependent ones
            for hh in T.unroll(group):
                acc = 0.0
                for c in T.serial((S + MERGE_CHUNK - 1) // MERGE_CHUNK):
                    if c * MERGE_CHUNK < n_active:
                        for k in T.unroll(MERGE_CHUNK):
                            if early and c == 0:
                                pv[k] = pre[hh, k]
                            elif c * MERGE_CHUNK + k < n_active:
                                pv[k] = part[g * group + hh, c * MERGE_CHUNK + k, tx]
                            else:
                                pv[k] = 0.0
                        for k in T.unroll(MERGE_CHUNK):
                            acc += w_s[hh, T.min(c * MERGE_CHUNK + k, S32 - 1)] * pv[k]
                out[(g * group + hh) * D + tx] = T.cast(acc, dt)
            if tx == 0:
                sem[g] = 0

    return merge


# The cluster merge's PTX: the cluster barrier (arrive releases this block's shared-memory writes,
# wait acquires its peers') and a load from a peer block's shared memory (mapa gives the peer's
# address of the same variable, ld.shared::cluster reads it).
CLUSTER_PRELUDE = r"""
__device__ __forceinline__ void tfd_cluster_arrive() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n" : : : "memory");
}
__device__ __forceinline__ void tfd_cluster_wait() {
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" : : : "memory");
}
__device__ __forceinline__ float tfd_ld_cluster(const float* p, int rank) {
  unsigned a = (unsigned)__cvta_generic_to_shared(p), r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(a), "r"(rank));
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(r) : "memory");
  return v;
}
"""

CLUSTER_MAX = 16  # blocks a cluster holds at most on sm_90 (past the portable 8)


def cluster_grid(S: int, cap: int, cluster: int) -> tuple[int, int, int]:
    """(programs per kv head, rounds, blocks a cluster) for S blocks of the cache merged through
    clusters of at most `cluster` programs: grid_splits' programs rounded up to whole clusters
    (a program past S does no work; it only joins its cluster's barriers)."""
    programs, _ = grid_splits(S, cap)
    cl = min(cluster, programs)
    programs = -(-programs // cl) * cl
    return programs, -(-S // programs), cl


def cluster_merge_macro(T, group: int, SG: int, R: int, CL: int, D: int, dt: str):
    """The split merge through distributed shared memory: every program kept each round's partial
    output and (max, sum) in its own shared memory (part_s, ml_s); after one cluster barrier,
    block `rank` of each cluster merges q head rank (rank + CL, ... when a cluster is smaller than
    the group) from its peers' shared memory: no global partials, no atomic, no L2 round trip.
    Entry e of a cluster is round e // CL of its block e % CL, the split c*CL + e % CL + (e // CL)*SG;
    lane l holds entries l, l + 32, ... for the weights, and the partials load PC entries at a time
    (the first PC before the (max, sum) pairs, so both are in flight at once).
    With more than one cluster a kv head (SG > CL) each cluster's merger writes its merged partial,
    unnormalised, and its (max, sum) to global scratch and arrives on sem[q head] (merge_macro's
    acquire-release pattern); the last cluster to arrive merges those few partials into out."""
    E = CL * R  # entries a cluster holds
    EP = -(-E // 32)  # entries a lane holds
    PC = min(32, E)  # partials a thread loads before it multiplies
    NCH = -(-E // PC)
    NC = SG // CL
    HP = -(-group // CL)  # q heads a merger handles

    def active(c, e, n_active):  # entry e of cluster c holds a split with work
        return T.And(e < E, c * CL + e % CL + (e // CL) * SG < n_active)

    @T.macro
    def merge(part_s, ml_s, w_s, part, ml, out, sem, g, px, tx, lane, warp, n_active):
        c = px // CL
        rank = px % CL
        mm = T.alloc_var("float32")
        ll = T.alloc_var("float32")
        acc = T.alloc_var("float32")
        me = T.alloc_local((EP,), "float32")
        le = T.alloc_local((EP,), "float32")
        pe = T.alloc_local((PC,), "float32")
        mk = T.alloc_local((NC,), "float32")
        arrived = T.alloc_var("int32")
        last = T.alloc_var("int32")
        tfd = T.call_extern

        T.evaluate(tfd("handle", "tfd_cluster_arrive"))
        T.evaluate(tfd("handle", "tfd_cluster_wait"))
        n_cl = (T.min(n_active, SG) + CL - 1) // CL  # clusters of this kv head with work
        if c < n_cl:
            for hp in T.unroll(HP):
                hh = rank + hp * CL
                if hh < group:
                    for k in T.unroll(PC):  # the first PC partials of dim tx
                        if active(c, k, n_active):
                            pe[k] = tfd("float32", "tfd_ld_cluster", T.address_of(part_s[k // CL, hh, tx]), k % CL)
                        else:
                            pe[k] = 0.0
                    mm = -T.infinity("float32")
                    for k in T.unroll(EP):
                        if active(c, k * 32 + lane, n_active):
                            me[k] = tfd("float32", "tfd_ld_cluster",
                                        T.address_of(ml_s[(k * 32 + lane) // CL, hh, 0]), (k * 32 + lane) % CL)
                            le[k] = tfd("float32", "tfd_ld_cluster",
                                        T.address_of(ml_s[(k * 32 + lane) // CL, hh, 1]), (k * 32 + lane) % CL)
                        else:
                            me[k] = -T.infinity("float32")
                            le[k] = 0.0
                        mm = T.max(mm, me[k])
                    mm = T.warp_reduce_max(mm)  # every warp reduces the same entries alike
                    ll = 0.0
                    for k in T.unroll(EP):
                        me[k] = T.exp(me[k] - mm)  # 0 for the inactive entries
                        ll += me[k] * le[k]
                    ll = T.warp_reduce_sum(ll)
                    if warp == 0:
                        for k in T.unroll(EP):
                            w_s[hp, k * 32 + lane] = me[k] / ll if NC == 1 else me[k]
                    T.sync_threads()
                    acc = 0.0
                    for k in T.unroll(PC):
                        acc += w_s[hp, k] * pe[k]
                    for ch in T.serial(1, NCH):
                        for k in T.unroll(PC):
                            if active(c, ch * PC + k, n_active):
                                pe[k] = tfd("float32", "tfd_ld_cluster",
                                            T.address_of(part_s[(ch * PC + k) // CL, hh, tx]), (ch * PC + k) % CL)
                            else:
                                pe[k] = 0.0
                        for k in T.unroll(PC):
                            acc += w_s[hp, ch * PC + k] * pe[k]
                    if NC == 1:
                        out[(g * group + hh) * D + tx] = T.cast(acc, dt)
                    else:  # this cluster's partial and its (max, sum)
                        part[g * group + hh, c, tx] = acc
                        if tx == 0:
                            ml[g * group + hh, c, 0] = mm
                            ml[g * group + hh, c, 1] = ll
        T.evaluate(tfd("handle", "tfd_cluster_arrive"))  # done reading its peers: they may exit
        if NC > 1 and c < n_cl:
            for hp in T.unroll(HP):
                hh = rank + hp * CL
                if hh < group:
                    arrived = 0
                    T.sync_threads()
                    if tx == 0:
                        arrived = T.if_then_else(T.atomic_add(sem[g * group + hh], 1, memory_order="acq_rel",
                                                              return_prev=True) == n_cl - 1, 1, 0)
                    # thread 0's answer to all: a barrier, not shared memory, which may alias part_s
                    # that peers are still reading
                    last = T.call_extern("int32", "__syncthreads_or", arrived)
                    if last != 0:  # the last cluster of this q head: merge the clusters' partials
                        mm = -T.infinity("float32")
                        for k in T.unroll(NC):
                            mk[k] = T.if_then_else(k < n_cl, ml[g * group + hh, k, 0], -T.infinity("float32"))
                            mm = T.max(mm, mk[k])
                        ll = 0.0
                        for k in T.unroll(NC):
                            mk[k] = T.exp(mk[k] - mm)
                            ll += T.if_then_else(k < n_cl, mk[k] * ml[g * group + hh, k, 1], 0.0)
                        acc = 0.0
                        for k in T.unroll(NC):
                            if k < n_cl:
                                acc += mk[k] / ll * part[g * group + hh, k, tx]
                        out[(g * group + hh) * D + tx] = T.cast(acc, dt)
                        if tx == 0:
                            sem[g * group + hh] = 0
        T.evaluate(tfd("handle", "tfd_cluster_wait"))

    return merge
