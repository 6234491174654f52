"""User-facing errors: each carries one line that the CLI prints after `tfdash: error:` (a
UsageError after `tfdash CMD: error:`, as the command's parser says its own)."""

from contextlib import contextmanager


class TfdashError(Exception):
    """An error the user can act on (bad input, missing file, capacity). Never a traceback."""


class UsageError(TfdashError):
    """A bad argument that the command's own checks found after parsing: the CLI says it as the
    parser says its own errors, naming the command and where its help is."""

    def __init__(self, message: str, prog: str = "tfdash"):
        super().__init__(message)
        self.prog = prog


@contextmanager
def as_usage(prog: str, *kinds: type):
    """Inside, an error of `kinds` (any TfdashError by default) is a UsageError of the command `prog`:
    for the shared checks that only its arguments can fail (a ctx_len past the cache, a sweep's
    range, a --target that names nothing), which word their line without knowing the command."""
    try:
        yield
    except kinds or (TfdashError,) as e:
        raise UsageError(str(e), prog) from None


class ConfigError(TfdashError):
    """config.json is missing, unreadable, or describes a model tfdash cannot run."""


class CheckpointError(TfdashError):
    """Weights are missing, unexpected, misshaped, wrongly typed, truncated or corrupt."""


class CapacityError(TfdashError):
    """A length (prompt + new tokens, ctx_len) past the KV cache or max_position_embeddings."""


class SnapshotError(TfdashError):
    """A profile snapshot file that cannot be loaded; the message says exactly why."""


class UnsupportedShape(ConfigError):
    """A model shape the tilelang engine has no kernel for (the torch runtimes may still run it)."""
