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


def _tilelang(dims):
    from tfdash.kernels.tl_small import embed_kernel

    return embed_kernel(dims)


FAMILY = register(Family(
    name="embed", roles=("tok", "table", "out"), cost=cost, torch=torch_embed, tilelang=_tilelang,
    describe="x = E[tok]",
))
