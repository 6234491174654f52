"""Knobs, declared in one place with their defaults; `SETTINGS.describe()` prints what is in effect.

    python -c "from tfdash.settings import SETTINGS; print(SETTINGS.describe())"

Each knob reads an environment variable when it is looked up, so a test or a bench can flip it
inside one process (A/B) with `SETTINGS.override(...)`.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass

ON, OFF = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")


@dataclass(frozen=True)
class Knob:
    env: str
    default: object
    help: str
    low: int | None = None  # a whole-number knob's least value
    high: int | None = None  # and its greatest
    multiple: int = 0  # a whole-number knob that is 0 (off) or a positive multiple of this
    choices: tuple[str, ...] = ()  # a word knob's values

    def read(self):
        raw = os.environ.get(self.env)
        if raw is None:
            return self.default
        from tfdash.errors import ConfigError

        if isinstance(self.default, bool):
            word = raw.strip().lower()
            if word not in (*ON, *OFF):  # a typo (TFDASH_PDL=of) is not silently "on"
                raise ConfigError(f"{self.env}={raw[:40]!r}: want on or off (1/0, true/false, yes/no)")
            return word in ON
        if isinstance(self.default, int):
            if not raw.strip():
                return self.default
            try:
                n = int(raw)
            except ValueError:
                raise ConfigError(f"{self.env}={raw[:40]!r}: want a whole number (default {self.default})") from None
            if self.multiple and (n < 0 or n % self.multiple):
                raise ConfigError(f"{self.env}={n}: want 0 (off) or a multiple of {self.multiple} "
                                  f"(default {self.default})")
            if (self.low is not None and n < self.low) or (self.high is not None and n > self.high):
                want = (f"{self.low} to {self.high}" if self.low is not None and self.high is not None
                        else f"at least {self.low}" if self.low is not None else f"at most {self.high}")
                raise ConfigError(f"{self.env}={n}: want {want} (default {self.default})")
            return n
        if self.choices and raw not in self.choices:
            names = ", ".join(c or "empty" for c in self.choices)
            raise ConfigError(f"{self.env}={raw[:40]!r}: want {names} (default {self.default or 'empty'})")
        return raw


# knobs that were measured, decided and removed: still set in a user's environment they change nothing,
# which `env_warnings` says rather than running silently as if they did
REMOVED_KNOBS = {
    "TFDASH_LM_HEAD_PICK_AHEAD": "the int8 head's pick has one form, the one that loads its bounds ahead",
    "TFDASH_OPROJ_MERGES": "attention merges its own partials; o_proj merging them lost and was removed",
    "TFDASH_RING_COPY": "argmax stores each token into the host's ring inside the graph (TFDASH_RING_IN_GRAPH)",
    "TFDASH_ATTN_TRIGGER_FIRST": "where attention lets o_proj launch is TFDASH_ATTN_TRIGGER_AT",
    "TFDASH_DOWN_SMEM_PREFETCH": "down staging its rows in shared memory lost and was removed",
}


# tfdash's variables that are not knobs: where it keeps files, the dashboard on any stdout, and the
# test suite's and device scripts' own (tests/test_first_hour_cli.py checks that every TFDASH_ name the
# repository spells is a knob, a removed knob or one of these)
OTHER_VARIABLES = ("TFDASH_CACHE_DIR", "TFDASH_CONFIG_DIR", "TFDASH_FORCE_TUI", "TFDASH_TEST_SHARD", "TFDASH_NCU",
                   "TFDASH_H200_SNAPSHOT", "TFDASH_CUPTI_STUB_H", "TFDASH_F32_TRUTH_UP_TO")


def env_warnings() -> list[str]:
    """One line for each removed knob set in the environment, its name and what took its place;
    and for each TFDASH_ variable tfdash does not read (a typo: TFDASH_PREFIL=0 changed nothing, unsaid),
    with the name it is nearest to."""
    import difflib

    lines = [f"{env} is set but has no effect: {why}" for env, why in REMOVED_KNOBS.items() if env in os.environ]
    known = [k.env for k in Settings.KNOBS.values()] + list(REMOVED_KNOBS) + list(OTHER_VARIABLES)
    for env in sorted(v for v in os.environ if v.startswith("TFDASH_") and v not in known):
        near = difflib.get_close_matches(env, known, n=1, cutoff=0.8)
        lines.append(f"{env} is set but tfdash reads no such variable" + (f" (did you mean {near[0]}?)" if near else
                                                                          " (the README's Knobs section lists them)"))
    return lines


class Settings:
    KNOBS = {
        "pdl": Knob("TFDASH_PDL", True,
                    "programmatic dependent launch: every tilelang kernel waits on its grid dependency "
                    "and launches through tilelang's cython launcher, so each GEMV streams its first "
                    "weights while the kernel before it drains; off: kernels without PDL instructions, "
                    "plain launches through tvm_ffi"),
        "depth": Knob("TFDASH_DEPTH", 48, "decode steps the host keeps in flight ahead of the GPU (CUDA; 1 to "
                      "63, the token ring's size less one): tens of ms of GPU work on the H200, enough to ride out "
                      "the host stalls a drawing dashboard causes in the same process and the profiler's stop at "
                      "the end of a window", low=1, high=63),
        "ring_in_graph": Knob("TFDASH_RING_IN_GRAPH", True,
                              "argmax stores each token into the host's pinned token ring (slot pos % 64) "
                              "through the ring's device address from inside the step's graph, so no copy "
                              "follows a replay; off: a 4-byte copy-engine copy after each replay (bench "
                              "backend tilelang-ringcopy, the A/B baseline; benchmarks/ has the measured "
                              "difference)"),
        "ring_stamps": Knob("TFDASH_RING_STAMPS", True,
                            "with the ring in the graph, argmax stamps the GPU's clock beside each token, so a "
                            "step's device time is the difference of two stamps and its slot is marked by an "
                            "untimed event; off: a timed event after each replay, which costs each step about "
                            "1.8 us of GPU time (bench backend tilelang-ringevents, the A/B baseline; "
                            "scripts/step_boundary.py measures an event's cost)"),
        "state_arena": Knob("TFDASH_STATE_ARENA", 4096,
                            "a runtime's small state (activations, rope tables, attention's partials and "
                            "counters) in one allocation from a 2 MiB page boundary, each buffer at a fixed "
                            "offset, a multiple of this many bytes; 0: each buffer wherever the caching "
                            "allocator puts it, which spread identical runtimes' speed (scripts/placement.py "
                            "measures both)", multiple=512),  # tfdash.engine.memory.GRANULE
        "attn_ilp": Knob("TFDASH_ATTN_ILP", True,
                         "attention's score and value phases as independent chains of instructions (4 "
                         "accumulators a sum, no branch between the dot products), which the scheduler "
                         "interleaves; off: one chain each (bench backend tilelang-chains, the A/B "
                         "baseline; benchmarks/ has the measured difference)"),
        "attn_rounds_carry": Knob("TFDASH_ATTN_ROUNDS_CARRY", True,
                                  "past split_cap x block positions (2048 by default) the fused attention's "
                                  "programs take the cache's blocks in rounds: each program norms and rotates q "
                                  "once, in its first round, and loads its next round's K/V under this round's "
                                  "arrival and merge; off: every round does both at its start (bench backend "
                                  "tilelang-eachround, the A/B baseline; benchmarks/ has the measured difference)"),
        "lm_head_q8": Knob("TFDASH_LM_HEAD_Q8", True,
                           "the lm_head bounds every logit through an int8 copy of its weight and computes "
                           "exactly only the rows that may hold the argmax: the same tokens from half the head's "
                           "bytes; off: the bf16 GEMV (bench backend tilelang-bf16head, the A/B baseline; "
                           "benchmarks/ has the measured difference). The tilelang engine's only: the torch "
                           "runtimes keep the GEMV head"),
        "prefill": Knob("TFDASH_PREFILL", True,
                        "a prompt is taken 16 positions at a time (tensor-core GEMMs that stream each weight "
                        "once a chunk, a causal attention over the cache), then the step's lm_head and argmax "
                        "alone on its last position make the first token; off: the decode step walks the "
                        "prompt one position a step"),
        "overlap_windows": Knob("TFDASH_OVERLAP_WINDOWS", False,
                                "CUPTI profile windows start and finish with steps in flight instead of "
                                "draining around them (Generation's `overlaps`). Off: measured on the H200 it "
                                "cost more tok/s than draining, not less (benchmarks/ has the run); a guess "
                                "at why: the profiler's stop then waits for and records every step in flight"),
        "timing": Knob("TFDASH_TIMING", "auto",
                       "per-kernel timing in the dashboard and `--headless --profile`: auto (every step's "
                       "kernels from CUPTI activity records consumed in C (tfdash.profiling.cupti_ring, built "
                       "on first use with the system C compiler against the CUDA toolkit's cupti.h) on a "
                       "CUDA-graph engine; else profile windows, saying why), "
                       "continuous (the same), windows (profile windows only, as on `p`)",
                       choices=("auto", "continuous", "windows")),
        "continuous_steps": Knob("TFDASH_CONTINUOUS_STEPS", 256,
                                 "continuous timing: the kernel table's p50/p90 are over this many latest steps "
                                 "(a ring of steps x launches int64, fixed at the start; at least 2)", low=2),
        "attn_kv_early": Knob("TFDASH_ATTN_KV_EARLY", True,
                              "the fused attention reads pos and the KV cache rows before its grid dependency "
                              "(they were written by earlier steps), so the K/V stream overlaps the qkv GEMV's "
                              "tail; off: after it (bench backend tilelang-latekv, the A/B baseline; benchmarks/ "
                              "has the measured difference)"),
        "early_residual": Knob("TFDASH_EARLY_RESIDUAL", True,
                               "o_proj and down read the residual they add into before their grid dependency "
                               "(it was written two or more launches earlier); off: after it (bench backend "
                               "tilelang-lateres, the A/B baseline; benchmarks/ has the measured difference)"),
        "o_proj_trigger_first": Knob("TFDASH_O_PROJ_TRIGGER_FIRST", True,
                                     "o_proj lets gate_up launch at o_proj's start, so gate_up's blocks stream "
                                     "their first weights while attention runs (gate_up reads only weights before "
                                     "its grid dependency); off: after o_proj's grid dependency (bench backend "
                                     "tilelang-otlate, the A/B baseline; benchmarks/ has the measured difference)"),
        "attn_merge_early": Knob("TFDASH_ATTN_MERGE_EARLY", True,
                                 "attention's merging block loads its first partials beside the (max, sum) "
                                 "pairs, both loads in flight at once, where a kv head has at most 2 q heads "
                                 "(larger groups merge late: a group of 4 spilled registers merging early); "
                                 "off: after them (bench backend tilelang-mlate, "
                                 "the A/B baseline; benchmarks/ has the measured difference)"),
        "early_norm": Knob("TFDASH_EARLY_NORM", True,
                           "qkv_proj, gate_up and lm_head read their norm weight, and the fused attention its "
                           "q/k norm weights and cos/sin, before their grid dependency, so what follows it "
                           "waits only on activations in L2; off: after it (bench backend tilelang-latenorm, "
                           "the A/B baseline; benchmarks/ has the measured difference)"),
        "attn_merge_acq_rel": Knob("TFDASH_ATTN_MERGE_ACQ_REL", True,
                                   "attention's splits arrive at the merge with one acquire-release atomic "
                                   "after the block's barrier, and the merging block reads the partials after "
                                   "it, with no fences; off: a fence and a relaxed atomic (bench backend "
                                   "tilelang-fenced, the A/B baseline; benchmarks/ has the measured difference)"),
        "attn_merge_chunk": Knob("TFDASH_ATTN_MERGE_CHUNK", 0,
                                 "partials attention's merging block loads at once; 0: the shape's own, 32 where "
                                 "a kv head has 1 or 2 q heads (up to 32 splits in one round trip), else 16 (a "
                                 "group of 4 spills registers with 32); the same sums in the same order (bench "
                                 "backend tilelang-mc16, the A/B baseline; benchmarks/ has the measured difference)",
                                 low=0, high=64),
        "attn_trigger_at": Knob("TFDASH_ATTN_TRIGGER_AT", "",
                                "where attention's blocks let o_proj launch: dependency (at their grid "
                                "dependency) or values (once their values are done, so o_proj's and gate_up's "
                                "weight prefetch meets attention's merge, not its K/V loads); empty: the shape's "
                                "own, values where o_proj's weight is at most 4 MiB (0.6B), else dependency "
                                "(bench backend tilelang-tdep, the A/B baseline; benchmarks/ has the measured "
                                "difference)", choices=("", "dependency", "values")),
        "gate_up_silu": Knob("TFDASH_GATE_UP_SILU", True,
                             "gate_up's epilogue makes silu(g) * u (a warp pairs each gate row with its up "
                             "row), so down reads the intermediate as it is; off: down's every block makes all "
                             "of it from gate|up in its prologue (bench backend tilelang-downsilu, the A/B "
                             "baseline; benchmarks/ has the measured difference); the same bits"),
        "qkv_trigger_first": Knob("TFDASH_QKV_TRIGGER_FIRST", "auto",
                                  "qkv_proj lets attention launch at its start, so attention's blocks are "
                                  "resident and load K/V (earlier steps') while qkv streams its weights: auto (on "
                                  "where qkv's weight is at most 8 MiB: 0.6B), on, off (bench backend "
                                  "tilelang-qtlate, the A/B baseline; benchmarks/ has the measured difference)"),
        "attn_split_cap": Knob("TFDASH_ATTN_SPLIT_CAP", 32,
                               "programs per kv head in attention's grid at most; each loops over its "
                               "64-position blocks of the KV cache, so a larger cache launches no more "
                               "(bench backends tilelang-sc24/all)", low=1),
    }

    def __init__(self):
        self._overrides: dict[str, object] = {}

    def __getattr__(self, name):
        knobs = type(self).KNOBS
        if name not in knobs:
            raise AttributeError(name)
        if name in self._overrides:
            return self._overrides[name]
        return knobs[name].read()

    @contextmanager
    def override(self, **values):
        old = dict(self._overrides)
        self._overrides.update(values)
        try:
            yield self
        finally:
            self._overrides = old

    def values(self) -> dict:
        """Every knob's value in effect (environment and overrides included), by name: what a
        recorded result ran under."""
        return {name: getattr(self, name) for name in type(self).KNOBS}

    def describe(self) -> str:
        lines = []
        for name, k in type(self).KNOBS.items():
            value = getattr(self, name)
            src = "override" if name in self._overrides else ("env" if k.env in os.environ else "default")
            lines.append(f"{name} = {value!r}  ({src}; {k.env}, default {k.default!r})\n    {k.help}")
        return "\n".join(lines)


SETTINGS = Settings()
