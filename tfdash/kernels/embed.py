"""Embedding gather: x = E[tok], the one row of the embedding table a step reads."""

from tfdash.kernels.base import DTYPE_BYTES, Family, Operand, make_cost, register


def torch_embed(dims, bufs):
    bufs["out"].copy_(bufs["table"].index_select(0, bufs["tok"]).view(-1))


def cost(dims, ctx_len=0):
    H, es = dims["H"], DTYPE_BYTES[dims["dtype"]]
    return make_cost({}, {}, [
        Operand("tok", "activation", 4, 0),
        Operand("table", "weight", H * es, 0),
        Operand("out", "activation", 0, H * es),
    ])


def tilelang_embed(dims):
    """One block; each thread copies 16-byte vectors of the row E[tok]."""
    import tilelang.language as T

    pdl = dims.get("pdl", True)

    H, V, dt = dims["H"], dims["V"], dims["dtype"]
    threads, vec = 256, 8
    iters = -(-H // (threads * vec))

    @T.prim_func
    def embed_gather(tok: T.Tensor((1,), "int32"), table: T.Tensor((V, H), dt), out: T.Tensor((H,), dt)):
        with T.Kernel(1, threads=threads) as _:
            tx = T.get_thread_binding(0)
            if pdl:  # programmatic dependent launch: wait for the kernel before, then let the next one launch
                T.pdl_sync()
                T.pdl_trigger()
            t = tok[0]
            for it in T.unroll(iters):
                if (it * threads + tx) * vec < H:
                    for j in T.vectorized(vec):
                        out[(it * threads + tx) * vec + j] = table[t, (it * threads + tx) * vec + j]

    return embed_gather


FAMILY = register(Family(
    name="embed", roles=("tok", "table", "out"), cost=cost, torch=torch_embed, tilelang=tilelang_embed,
    describe="x = E[tok]",
))
