"""Defaults the command line needs before anything heavy is imported (`tfdash --help` must not
import torch): the default prompt."""

DEFAULT_PROMPT = "Write a detailed explanation of how a GPU executes a matrix multiplication."
