"""Profiling: the static analysis of a step (analyze, targets), and the measurements set beside it
(bandwidth probe, per-launch timing in graph replays, marginal cost, NVML), kept in a bounded
Session and frozen into immutable ProfileSnapshots with their exporters."""
