"""Continuous per-kernel timing: every kernel of every replayed step, from CUPTI's activity
records, mapped onto the StepPlan and summarised in bounded memory.

    sources   RecordSource: CuptiActivity (cupti-python), ReplaySource (recorded records);
              ring_source: RingSource (the C ring, the default)
    mapper    StepMapper: the record stream cut into whole steps of the plan
    stats     ContinuousStats: per-launch p50/p90/last over the latest steps, the ctx_len sweep,
              the slowest steps; ContinuousView (what the snapshot reads)
    timing    ContinuousTiming (the Session's handle), PausingWindow, start_continuous
"""

from tfdash.profiling.continuous.mapper import StepMapper, Steps
from tfdash.profiling.continuous.sources import CuptiActivity, Records, RecordSource, ReplaySource, Unavailable, records
from tfdash.profiling.continuous.stats import ContinuousStats, ContinuousView
from tfdash.profiling.continuous.timing import ContinuousTiming, PausingWindow, start_continuous

__all__ = ["ContinuousStats", "ContinuousTiming", "ContinuousView", "CuptiActivity", "PausingWindow", "RecordSource",
           "Records", "ReplaySource", "StepMapper", "Steps", "Unavailable", "records", "start_continuous"]
