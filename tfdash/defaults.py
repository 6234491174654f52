"""Defaults the command line needs before anything heavy is imported (`tfdash --help` must not
import torch): the default prompt, the default generation lengths and the model presets' names."""

DEFAULT_PROMPT = "Write a detailed explanation of how a GPU executes a matrix multiplication."

# New tokens without --max-new-tokens, where the run uses them and where --help says them
HEADLESS_MAX_NEW = 256
AB_MAX_NEW = 1024  # headless --ab: room for the A/B's windows (832 steps at its sizes) inside the generation
DASHBOARD_MAX_NEW = 2048  # the dashboard's: the headline tok/s length

# The random weights' seed without --seed. The parsers' default is None, not this, so that an explicit
# `--seed 0` with --ckpt is told apart from no --seed and refused as any other seed is.
DEFAULT_SEED = 0

# The model presets' names (tfdash.engine.config.PRESETS holds their shapes; a test keeps the two
# in step), here so that `--help` can list them without importing torch.
PRESET_NAMES = ("qwen3-0.6b", "qwen3-1.7b", "qwen3-4b", "qwen3-8b", "qwen3-14b", "qwen3-32b", "qwen3-tiny")
