#!/usr/bin/env bash
# One device call on the H200: GPU tests, then `tfdash bench`, logs and JSON under $OUT.
#   run with carry [".gpu"]:  bash scripts/h200_check.sh [tests|diag|bench|profile|app|all] [extra bench args]
#   (all = tests, diag, bench; engine = bench, headless run, GPU tests; observe = issues 5 and 6 (+ bench); dash = app + tty; profile = scripts/gpu_profile_check.py; app = scripts/gpu_app_check.py;
#    counters = tfdash counters on one layer plus embed, lm_head and argmax (issue 17);
#    final = the whole GPU suite at every size; headline = the README's bench table on today's plan (1.7B with torch-compile, then 0.6B, 4B, 8B); overhead = the dashboard against headless with each run's stalls, continuous and windows timing; tables = the GEMV table's 0.6B and 4B entries in the default plan; tails = GEMV grids that spread rows unevenly over warps (4B o_proj and down, 0.6B gate_up), tails14 = the same for 14B; live = the dashboard's A/B, counters and rates keys (scripts/gpu_live_check.py); features = session 5's feature checks; sizes = precompile + kernel and engine GPU tests at every Qwen3 size; sizebench = bench per size, SIZES="..." to pick; where = per-op exclusive us against each op's floor at 0.6B and 4B (scripts/kernel_times.py --model); inflight = GEMVs with more loads in flight a lane at 4B, 0.6B and 1.7B; confirm = session 11's 4B and 0.6B table entries tested and benched; inflight14 = the same for 14B; next = what session 11 leaves (the early_norm and acqrel variants tested and A/B'd at 1.7B, 0.6B and 4B; since on by default); inflight32 = 32B's qkv_proj and gate_up at 4B's and 14B's settings; land12 = the GPU suite on session 12's defaults with the 1.7B headline bench; probe = the phases alone at 1.7B and 0.6B, ctx 1024 and 256; land14 = session 14's default tested with the 1.7B headline bench; land15 = session 15's defaults (4B's and 8B's late merge, 0.6B's late trigger) tested and A/B'd; silu16 = gate_up making silu(g) * u, tested and A/B'd at 1.7B and 4B; tune16 = 4B's down settings with it, and 0.6B's and 8B's A/B; land16 = session 16's defaults tested, the 1.7B headline and 4B's A/B; sweep16 = 0.6B's and 1.7B's GEMV settings without down's silu, 14B's A/B; next17 = per-op times on today's plan at 0.6B, 1.7B and 4B; next18 = the qkv GEMV letting attention launch at its start, tested and A/B'd; land18 = it by default at 0.6B and 1.7B, tested, the 1.7B headline and 0.6B's A/B against it off, 8B's with it on; land19 = argmax storing the token into the pinned ring from inside the graph by default: tested, the 1.7B headline with torch-compile and 0.6B's A/B against the copy after the replay; order = which part of the state (the KV cache or the small buffers) carries the ~1.7 % between identical engines (scripts/placement.py); land23 = attention's phases as independent chains by default: tested at every size, the 1.7B and 0.6B A/Bs against tilelang-chains, every attention kernel test and the steps; land27 = attention's rounds carrying q and the next round's K/V by default, A/B'd against tilelang-eachround at 4096 new tokens (1.7B, 0.6B); arena29 = runtimes' small state scattered against in arenas by alignment (scripts/placement.py; ALIGNS=512,4096,...; PLACE=--weights adds own weights, scattered and packed; PLACE=--modules own loads of the kernels' code); procs = the default plan in N processes with the small state in its arena and scattered, alternating; land29 = the 4 KiB arena by default: the 1.7B steps tested, 1.7B and 0.6B benched; curve = a generation's step times against back-to-back replays by position (scripts/step_curve.py); sass = attention's SASS and where its warps stall (scripts/kernel_sass.py under ncu); same3 = three backends of the one default plan at 1.7B, built in turn on one state: is the first built slowest)
# Needs the offline bundle (../shared/gpu-bundle .gpu/site.tar.xz). The tilelang kernel cache
# lives in .tlcache/ (ignored, not carried), so a warm machine reuses it between calls.
set -u
what=${1:-all}; shift || true
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
tar -C /tmp -xJf .gpu/site.tar.xz
[ -f .gpu/cupti.tar.xz ] && tar -C /tmp -xJf .gpu/cupti.tar.xz  # cupti-python, for the continuous-timing tests
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TILELANG_CACHE_DIR=$PWD/.tlcache
export TFDASH_CACHE_DIR=$PWD/.tlcache/tfdash
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -c "import torch, tilelang; print('torch', torch.__version__, 'tilelang', tilelang.__version__)" 2>&1 | tail -1
# gpu_shards N LOG SECONDS PYTEST_ARGS...: the GPU tests in N processes side by side (TFDASH_TEST_SHARD,
# tests/conftest.py), each under its own timeout and naming its tests one by one (-v, written line by
# line to LOG-i.log) so a cut still says what passed; then the totals. The processes compile their
# kernels on the machine's 16 cores at once.
gpu_shards() {
  local n=$1 log=$2 secs=$3; shift 3
  for i in $(seq 0 $((n - 1))); do
    TFDASH_TEST_SHARD=$i/$n timeout "$secs" python3 -m pytest -m gpu -v -p no:cacheprovider "$@" 2>&1 \
      | grep --line-buffered -v "TileLang:" > "$log-$i.log" &
  done
  wait
  echo "tests: $(cat "$log"-*.log | grep -c ' PASSED') passed, $(cat "$log"-*.log | grep -c ' FAILED') failed," \
    "$(cat "$log"-*.log | grep -c ' ERROR') errors$(grep -L -E '[0-9]+ (passed|failed)' "$log"-*.log | sed 's/^/; cut: /' | tr -d '\n')"
  cat "$log"-*.log | grep -E " (FAILED|ERROR)|^E  " | cut -c1-200 | head -8
}
if [ "$what" = tests ] || [ "$what" = all ]; then
  python3 -m pytest -m gpu tests/gpu -q -rA -p no:cacheprovider --junitxml="$OUT/gpu-tests.xml" ${TESTS_K:+-k "$TESTS_K"} 2>&1 \
    | grep -v "TileLang:" | tee "$OUT/gpu-tests.log" | tail -40
fi
if [ "$what" = diag ] || [ "$what" = all ]; then
  python3 scripts/kernel_times.py --out "$OUT/kernel_times.json" 2>&1 | grep -v "TileLang:" | tee "$OUT/kernel_times.log" | tail -16
fi
if [ "$what" = bench ] || [ "$what" = all ] || [ "$what" = engine ]; then
  python3 -m tfdash bench --json "$OUT/bench.json" "$@" 2>&1 | grep -v "TileLang:" | tee "$OUT/bench.log" | tail -12
fi
if [ "$what" = headless ] || [ "$what" = engine ]; then
  { time python3 -m tfdash --headless --device cuda --max-new-tokens 2048 ; } > "$OUT/headless.log" 2>&1
  grep -v "TileLang:" "$OUT/headless.log" | tail -8
fi
if [ "$what" = engine ]; then
  python3 -m pytest -m gpu tests/gpu -q -rA -p no:cacheprovider --junitxml="$OUT/gpu-tests.xml" ${TESTS_K:+-k "$TESTS_K"} 2>&1 \
    | grep -v "TileLang:" > "$OUT/gpu-tests.log"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/gpu-tests.log" | tail -12
fi
if [ "$what" = profile ]; then
  python3 scripts/gpu_profile_check.py --out "$OUT/profile_check.json" 2>&1 | grep -v "TileLang:" | tee "$OUT/profile_check.log" | tail -25
fi
if [ "$what" = observe ]; then
  # issues 5 and 6 in one call: everything under $OUT/r, packed into $OUT/results.tgz after each
  # part (at most 8 files come back from a device call); bench only when given bench arguments
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  python3 scripts/gpu_app_check.py --out-dir "$R/app" 2>&1 | grep -v "TileLang:" > "$R/app.log"; tail -4 "$R/app.log"; pack
  python3 scripts/gpu_profile_check.py --out "$R/profile_check.json" 2>&1 | grep -v "TileLang:" > "$R/profile_check.log"
  grep -E "FAIL|ERROR|info" "$R/profile_check.log"; tail -16 "$R/profile_check.log"; pack
  python3 -m tfdash --headless --profile --export "$R/headless-export" --device cuda --max-new-tokens 2048 \
    > "$R/headless-profile.log" 2> "$R/headless-profile.err"; tail -14 "$R/headless-profile.log" | cut -c1-200; pack
  python3 -m pytest -m gpu tests/test_profiling_gpu.py -q -rA -p no:cacheprovider 2>&1 | grep -v "TileLang:" \
    > "$R/profiling-gpu-tests.log"; grep -E "^(FAILED|ERROR|E  )|passed|failed" "$R/profiling-gpu-tests.log" | cut -c1-300; pack
  if [ $# -gt 0 ]; then
    python3 -m tfdash bench --json "$R/bench.json" "$@" 2>&1 | grep -v "TileLang:" > "$R/bench.log"; tail -5 "$R/bench.log"; pack
  fi
fi
if [ "$what" = dash ]; then
  # issue 6 in one call: the app check (mid-run SVG, snapshot, A/B) and tfdash on a real pty
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  python3 scripts/gpu_app_check.py --out-dir "$R/app" 2>&1 | grep -v "TileLang:" > "$R/app.log"; tail -4 "$R/app.log"; pack
  python3 scripts/gpu_tty_check.py --out-dir "$R/tty" > "$R/tty.log" 2>&1; cat "$R/tty.log" | cut -c1-200; pack
fi
if [ "$what" = sizes ]; then
  # every Qwen3 size: compile every kernel in parallel, the kernel and engine GPU tests, then (with
  # bench arguments) `tfdash bench` per size; everything under $OUT/r, packed after each part
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  python3 scripts/precompile.py 2>&1 | grep -v "TileLang:" > "$R/precompile.log"; tail -2 "$R/precompile.log"; pack
  for t in tests/gpu/test_kernels_gpu.py tests/gpu/test_engine_gpu.py; do
    n=$(basename "$t" .py)
    timeout ${TESTS_TIMEOUT:-400} python3 -m pytest -m gpu "$t" -q -rA -s -p no:cacheprovider --junitxml="$R/$n.xml" \
      ${TESTS_K:+-k "$TESTS_K"} 2>&1 | grep -v "TileLang:" > "$R/$n.log"
    grep -E "^(FAILED|ERROR)|passed|failed|cosine|agreement" "$R/$n.log" | cut -c1-220 | tail -40; pack
  done
fi
if [ "$what" = sizebench ]; then
  # `tfdash bench` for each size in $SIZES (default: all), JSON and logs under $OUT/r
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  for m in ${SIZES:-qwen3-0.6b qwen3-1.7b qwen3-4b qwen3-8b qwen3-14b qwen3-32b}; do
    python3 -m tfdash bench --model "$m" --json "$R/bench-$m.json" "$@" 2>&1 | grep -v "TileLang:" > "$R/bench-$m.log"
    tail -6 "$R/bench-$m.log" | cut -c1-160; pack
  done
fi
if [ "$what" = live ]; then
  # the live dashboard's keys on the H200 (scripts/gpu_live_check.py: the A/B of tilelang-lateres
  # with its SVG, gate_up's counters from the drill-down with tok/s before and after, TTFT and
  # decode-only of a 2048-token dashboard run), then the bench of the same pair right after and
  # a headless 2048-token run
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  python3 scripts/precompile.py --only-default --sizes qwen3-1.7b 2>&1 | grep -v "TileLang:" > "$R/precompile.log"; tail -1 "$R/precompile.log"
  timeout 330 python3 scripts/gpu_live_check.py --out-dir "$R/live" > "$R/live.log" 2>&1; grep -v "TileLang:" "$R/live.log" | tail -5 | cut -c1-250; pack
  timeout 150 python3 -m tfdash bench --max-new-tokens 8192 --backends tilelang-graph,tilelang-lateres --json "$R/bench-lateres-8192.json" 2>&1 \
    | grep -v "TileLang:" | tail -4 | cut -c1-160; pack
  timeout 40 python3 -m tfdash --headless --device cuda --max-new-tokens 2048 > "$R/headless-2048.log" 2>&1; grep -v "TileLang:" "$R/headless-2048.log" | tail -2 | cut -c1-250; pack
fi
if [ "$what" = final ]; then
  # the whole GPU suite on the H200 at every size, in parts packed as they finish: every kernel
  # (precompiled in parallel first), the engine at every size, then continuous timing, counters
  # and the profiler's own GPU tests
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  python3 scripts/precompile.py 2>&1 | grep -v "TileLang:" > "$R/precompile.log"; tail -1 "$R/precompile.log"
  # the kernel tests (small buffers) in 4 processes side by side; the engines one at a time (32B's
  # weights take half the GPU)
  gpu_shards 4 "$R/kernels" ${TESTS_TIMEOUT:-300} tests/gpu/test_kernels_gpu.py; pack
  for t in tests/gpu/test_engine_gpu.py "tests/gpu/test_continuous_gpu.py tests/gpu/test_counters_gpu.py tests/test_profiling_gpu.py"; do
    n=$(basename "${t%% *}" .py)
    timeout ${TESTS_TIMEOUT:-300} python3 -m pytest -m gpu $t -q -rA -p no:cacheprovider --junitxml="$R/$n.xml" 2>&1 \
      | grep -v "TileLang:" > "$R/$n.log"; echo "$n: $(grep -E "passed|failed" "$R/$n.log" | tail -1)"; grep -E "^(FAILED|ERROR)" "$R/$n.log" | cut -c1-200 | head -8; pack
  done
fi
if [ "$what" = land12 ]; then
  # session 12's defaults (early_norm and the acquire-release merge on; 32B's qkv_proj and gate_up
  # entries) under the GPU suite, about 9 minutes, parts packed as they finish: every kernel
  # (precompiled in parallel first), the engine at every size, the 1.7B bench with the
  # torch-compile peer and both knobs' baselines, then continuous timing, counters and the profiler
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  python3 scripts/precompile.py 2>&1 | grep -v "TileLang:" > "$R/precompile.log"; tail -1 "$R/precompile.log"
  for t in tests/gpu/test_kernels_gpu.py tests/gpu/test_engine_gpu.py; do
    n=$(basename "$t" .py)
    timeout 200 python3 -m pytest -m gpu $t -q -rA -p no:cacheprovider --junitxml="$R/$n.xml" 2>&1 \
      | grep -v "TileLang:" > "$R/$n.log"; echo "$n: $(grep -E "passed|failed" "$R/$n.log" | tail -1)"; grep -E "^(FAILED|ERROR)" "$R/$n.log" | cut -c1-200 | head -8; pack
  done
  timeout 200 python3 -m tfdash bench --backends tilelang-graph,torch-compile,tilelang-latenorm,tilelang-fenced \
    --json "$R/bench-qwen3-1.7b.json" 2>&1 | grep -v "TileLang:" > "$R/bench-qwen3-1.7b.log"; tail -6 "$R/bench-qwen3-1.7b.log" | cut -c1-160; pack
  timeout 100 python3 -m pytest -m gpu tests/gpu/test_continuous_gpu.py tests/gpu/test_counters_gpu.py tests/test_profiling_gpu.py -q -rA \
    -p no:cacheprovider 2>&1 | grep -v "TileLang:" > "$R/profiling.log"; echo "profiling: $(grep -E "passed|failed" "$R/profiling.log" | tail -1)"; pack
fi
if [ "$what" = probe ]; then
  # the fused attention's phases alone (scripts/attn_phases.py) at 1.7B and 0.6B, ctx 1024 and 256
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  python3 scripts/precompile.py --only-default --sizes qwen3-1.7b,qwen3-0.6b 2>&1 | grep -v "TileLang:" > "$R/precompile.log"
  for m in qwen3-1.7b qwen3-0.6b; do for c in 1024 256; do
    timeout 100 python3 scripts/attn_phases.py --model $m --ctx $c ${PROBE_VARIANTS:+--variants $PROBE_VARIANTS} \
      --out "$R/phases-$m-$c.json" 2>&1 | grep -v "TileLang:\|compiled" > "$R/phases-$m-$c.log"; tail -11 "$R/phases-$m-$c.log" | cut -c1-160; pack
  done; done
fi
if [ "$what" = land14 ]; then
  # session 14's default (the merge's 32-partial chunk at groups of 1 and 2), about 6 minutes:
  # its attention against torch at 1.7B, the 1.7B headline bench with its baseline (tilelang-mc16)
  # and the torch-compile peer, then the step against the reference and the baselines' graphs bit
  # for bit against the default's
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  python3 scripts/precompile.py --only-default --sizes qwen3-1.7b --variants tilelang-mc16,tilelang-otlate,tilelang-mlate,tilelang-latenorm,tilelang-fenced,tilelang-lateres,tilelang-latekv \
    2>&1 | grep -v "TileLang:" > "$R/precompile.log"; tail -1 "$R/precompile.log"
  timeout 60 python3 -m pytest -m gpu tests/gpu/test_kernels_gpu.py -q -rA -p no:cacheprovider \
    -k "test_attention_merge_chunk and qwen3-1.7b" 2>&1 | grep -v "TileLang:" > "$R/chunk-tests.log"
  grep -E "^(FAILED|ERROR)|passed|failed" "$R/chunk-tests.log" | cut -c1-200 | tail -4; pack
  timeout 230 python3 -m tfdash bench --backends tilelang-graph,tilelang-mc16,torch-compile \
    --json "$R/bench-qwen3-1.7b.json" 2>&1 | grep -v "TileLang:" > "$R/bench-qwen3-1.7b.log"; tail -5 "$R/bench-qwen3-1.7b.log" | cut -c1-160; pack
  timeout 120 python3 -m pytest -m gpu tests/gpu/test_engine_gpu.py -q -rA -p no:cacheprovider \
    -k "test_step_matches_reference or test_plan_variants_decode_the_same_bits" 2>&1 | grep -v "TileLang:" > "$R/engine-tests.log"
  grep -E "^(FAILED|ERROR)|passed|failed" "$R/engine-tests.log" | cut -c1-200 | tail -4; pack
fi
if [ "$what" = land15 ]; then
  # session 15's defaults (groups of 3 and more merge late: 4B, 8B; 0.6B's attention lets o_proj
  # launch after its values), about 6 minutes, parts packed as they finish: attention against
  # torch at every size and under both triggers, the trigger's graph bit for bit, 0.6B's and 4B's
  # steps against the reference, then 0.6B's and 4B's A/B against the plans before in one process
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  python3 scripts/precompile.py --only-default --sizes qwen3-1.7b,qwen3-0.6b,qwen3-4b,qwen3-8b --variants tilelang-tdep,tilelang-meg4 \
    2>&1 | grep -v "TileLang:" > "$R/precompile.log"; tail -1 "$R/precompile.log"
  timeout 240 python3 -m pytest -m gpu tests/gpu/test_kernels_gpu.py tests/gpu/test_engine_gpu.py -q -rA -p no:cacheprovider \
    -k "test_attention_trigger_and_merge_group or (test_attention_at_every_size and (0.6b or 1.7b or 4b or 8b)) or test_plan_variants_decode_the_same_bits or (test_every_size_step_matches_reference and (0.6b or qwen3-4b))" 2>&1 \
    | grep -v "TileLang:" > "$R/land-tests.log"; grep -E "^(FAILED|ERROR)|passed|failed" "$R/land-tests.log" | cut -c1-200 | tail -6; pack
  for m in qwen3-0.6b qwen3-4b; do
    v=tilelang-graph,tilelang-tdep; [ $m = qwen3-4b ] && v=tilelang-graph,tilelang-meg4
    timeout 150 python3 -m tfdash bench --model $m --backends $v,torch-graph --json "$R/bench-$m.json" 2>&1 \
      | grep -v "TileLang:" > "$R/bench-$m.log"; tail -5 "$R/bench-$m.log" | cut -c1-150; pack
  done
fi
if [ "$what" = silu16 ]; then
  # gate_up making silu(g) * u in its epilogue (the default) against down's prologue making it
  # (tilelang-downsilu), about 9 minutes, parts packed as they finish: the two MLPs bit for bit at
  # 1.7B and 4B, the 1.7B and 4B A/B in one process each, per-op times at 1.7B, then the GEMVs
  # against torch at every size, the MLPs bit for bit at every size, the 1.7B graph bit for bit
  # and the steps against the reference; SIZES="..." for more benches after that
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  python3 scripts/precompile.py --only-default --sizes qwen3-1.7b,qwen3-4b,qwen3-0.6b,qwen3-8b --variants tilelang-downsilu \
    2>&1 | grep -v "TileLang:" > "$R/precompile.log"; tail -1 "$R/precompile.log"
  timeout 60 python3 -m pytest -m gpu tests/gpu/test_kernels_gpu.py -q -rA -p no:cacheprovider \
    -k "test_mlp_silu_in_gate_up_same_bits and (1.7b or 4b)" 2>&1 | grep -v "TileLang:" > "$R/bits-tests.log"
  grep -E "^(FAILED|ERROR)|passed|failed" "$R/bits-tests.log" | cut -c1-200 | tail -4; pack
  for m in qwen3-1.7b qwen3-4b; do
    timeout 150 python3 -m tfdash bench --model $m --backends tilelang-graph,tilelang-downsilu --json "$R/bench-$m.json" 2>&1 \
      | grep -v "TileLang:" > "$R/bench-$m.log"; tail -4 "$R/bench-$m.log" | cut -c1-150; pack
  done
  timeout 90 python3 scripts/kernel_times.py --variants tilelang-downsilu --out "$R/kernel_times-1.7b.json" 2>&1 \
    | grep -v "TileLang:" > "$R/kernel_times-1.7b.log"; sed -n 3,12p "$R/kernel_times-1.7b.log"; pack
  timeout 200 python3 -m pytest -m gpu tests/gpu/test_kernels_gpu.py tests/gpu/test_engine_gpu.py -q -rA -p no:cacheprovider \
    -k "test_gemv or test_mlp_silu_in_gate_up_same_bits or test_plan_variants_decode_the_same_bits or test_step_matches_reference or (test_every_size_step_matches_reference and (0.6b or qwen3-4b))" 2>&1 \
    | grep -v "TileLang:" > "$R/silu-tests.log"; grep -E "^(FAILED|ERROR)|passed|failed" "$R/silu-tests.log" | cut -c1-200 | tail -8; pack
  for m in ${SIZES:-}; do
    timeout 150 python3 -m tfdash bench --model $m --backends tilelang-graph,tilelang-downsilu --json "$R/bench-$m.json" 2>&1 \
      | grep -v "TileLang:" > "$R/bench-$m.log"; tail -4 "$R/bench-$m.log" | cut -c1-150; pack
  done
fi
if [ "$what" = tune16 ]; then
  # with gate_up making silu(g) * u: 4B's down at the table's 3 blocks an SM (90 registers a
  # thread: 2 fit), with a 3-block register budget, at the rule's 2 blocks, at 10-chunk segments;
  # then 0.6B's and 8B's A/B against tilelang-downsilu, each in one process (about 7 minutes)
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  python3 scripts/precompile.py --only-default --sizes qwen3-4b,qwen3-0.6b,qwen3-8b --variants tilelang-downsilu \
    --gemv down:min_blocks=3 --gemv down:blocks_per_sm=2 --gemv down:seg=10 2>&1 | grep -v "TileLang:" > "$R/precompile.log"
  tail -1 "$R/precompile.log"
  timeout 200 python3 -m tfdash bench --model qwen3-4b --backends tilelang-graph --gemv down:min_blocks=3 \
    --gemv down:blocks_per_sm=2 --gemv down:seg=10 --json "$R/bench-qwen3-4b-down.json" 2>&1 \
    | grep -v "TileLang:" > "$R/bench-qwen3-4b-down.log"; tail -6 "$R/bench-qwen3-4b-down.log" | cut -c1-150; pack
  for m in qwen3-0.6b qwen3-8b; do
    timeout 150 python3 -m tfdash bench --model $m --backends tilelang-graph,tilelang-downsilu --json "$R/bench-$m.json" 2>&1 \
      | grep -v "TileLang:" > "$R/bench-$m.log"; tail -4 "$R/bench-$m.log" | cut -c1-150; pack
  done
fi
if [ "$what" = land16 ]; then
  # session 16's defaults (gate_up making silu(g) * u; 4B's down at 10-chunk segments), about 8
  # minutes: 4B's GEMVs against torch and its step against the reference, the 1.7B headline bench
  # with the plan before and the torch-compile peer, then 4B's A/B against the plan before
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  python3 scripts/precompile.py --only-default --sizes qwen3-1.7b,qwen3-4b --variants tilelang-downsilu \
    2>&1 | grep -v "TileLang:" > "$R/precompile.log"; tail -1 "$R/precompile.log"
  timeout 120 python3 -m pytest -m gpu tests/gpu/test_kernels_gpu.py tests/gpu/test_engine_gpu.py -q -rA -p no:cacheprovider \
    -k "(test_gemv_at_every_size and 4b) or (test_mlp_silu_in_gate_up_same_bits and 4b) or (test_every_size_step_matches_reference and qwen3-4b)" \
    2>&1 | grep -v "TileLang:" > "$R/land-tests.log"; grep -E "^(FAILED|ERROR)|passed|failed" "$R/land-tests.log" | cut -c1-200 | tail -6; pack
  timeout 260 python3 -m tfdash bench --backends tilelang-graph,tilelang-downsilu,torch-compile \
    --json "$R/bench-qwen3-1.7b.json" 2>&1 | grep -v "TileLang:" > "$R/bench-qwen3-1.7b.log"; tail -5 "$R/bench-qwen3-1.7b.log" | cut -c1-160; pack
  timeout 150 python3 -m tfdash bench --model qwen3-4b --backends tilelang-graph,tilelang-downsilu --json "$R/bench-qwen3-4b.json" 2>&1 \
    | grep -v "TileLang:" > "$R/bench-qwen3-4b.log"; tail -4 "$R/bench-qwen3-4b.log" | cut -c1-150; pack
fi
if [ "$what" = sweep16 ]; then
  # GEMV settings once down's prologue is a copy: 0.6B's o_proj a row a warp (128 blocks, not 64),
  # its down at 6-chunk segments, its gate_up at 2 blocks an SM; 1.7B's down at 8-chunk segments and
  # o_proj a row a warp; then 14B's A/B against tilelang-downsilu (about 7 minutes)
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  python3 scripts/precompile.py --only-default --sizes qwen3-0.6b,qwen3-1.7b --gemv o_proj:rows=1 --gemv down:seg=6 \
    --gemv gate_up:blocks_per_sm=2 --gemv down:seg=8 2>&1 | grep -v "TileLang:" > "$R/precompile.log"; tail -1 "$R/precompile.log"
  timeout 150 python3 -m tfdash bench --model qwen3-0.6b --backends tilelang-graph --gemv o_proj:rows=1 --gemv down:seg=6 \
    --gemv gate_up:blocks_per_sm=2 --json "$R/bench-qwen3-0.6b-sweep.json" 2>&1 | grep -v "TileLang:" > "$R/bench-qwen3-0.6b-sweep.log"
  tail -6 "$R/bench-qwen3-0.6b-sweep.log" | cut -c1-150; pack
  timeout 150 python3 -m tfdash bench --model qwen3-1.7b --backends tilelang-graph --gemv down:seg=8 --gemv o_proj:rows=1 \
    --json "$R/bench-qwen3-1.7b-sweep.json" 2>&1 | grep -v "TileLang:" > "$R/bench-qwen3-1.7b-sweep.log"
  tail -5 "$R/bench-qwen3-1.7b-sweep.log" | cut -c1-150; pack
  timeout 200 python3 -m tfdash bench --model qwen3-14b --backends tilelang-graph,tilelang-downsilu --json "$R/bench-qwen3-14b.json" 2>&1 \
    | grep -v "TileLang:" > "$R/bench-qwen3-14b.log"; tail -4 "$R/bench-qwen3-14b.log" | cut -c1-150; pack
fi
if [ "$what" = next17 ]; then
  # what session 16 left: per-op exclusive us against each op's floor on today's plan at 0.6B (the
  # one size under its bar), 1.7B and 4B, each beside tilelang-downsilu (about 5 minutes)
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  python3 scripts/precompile.py --only-default --sizes qwen3-0.6b,qwen3-1.7b,qwen3-4b --variants tilelang-downsilu \
    2>&1 | grep -v "TileLang:" > "$R/precompile.log"; tail -1 "$R/precompile.log"
  for m in qwen3-0.6b qwen3-1.7b qwen3-4b; do
    timeout 120 python3 scripts/kernel_times.py --model $m --variants tilelang-downsilu --out "$R/kernel_times-$m.json" 2>&1 \
      | grep -v "TileLang:" > "$R/kernel_times-$m.log"; grep -A10 "^op " "$R/kernel_times-$m.log" | cut -c1-120; pack
  done
fi
if [ "$what" = next18 ]; then
  # what session 17 could not measure: the qkv GEMV letting attention launch at its start
  # (--gemv qkv_proj:trigger_first=1): the graphs bit for bit, then the A/B at 0.6B, 1.7B and 4B,
  # each in one process (about 6 minutes)
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  timeout 200 python3 -m pytest -m gpu tests/gpu/test_engine_gpu.py -q -rA -p no:cacheprovider \
    -k "test_plan_variants_decode_the_same_bits" 2>&1 | grep -v "TileLang:" > "$R/graph-tests.log"
  grep -E "^(FAILED|ERROR)|passed|failed" "$R/graph-tests.log" | cut -c1-200 | tail -4; pack
  for m in qwen3-0.6b qwen3-1.7b qwen3-4b; do
    timeout 150 python3 -m tfdash bench --model $m --backends tilelang-graph --gemv qkv_proj:trigger_first=1 \
      --json "$R/bench-$m.json" 2>&1 | grep -v "TileLang:" > "$R/bench-$m.log"; tail -4 "$R/bench-$m.log" | cut -c1-150; pack
  done
fi
if [ "$what" = land18 ]; then
  # qkv_proj letting attention launch at its start by default (0.6B, 1.7B): the GEMV against torch,
  # the graphs bit for bit against it off, the 1.7B headline with torch-compile, 0.6B's A/B, then
  # 8B's with it on (off by default there) (about 10 minutes)
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  timeout 300 python3 -m pytest -m gpu tests/gpu/test_kernels_gpu.py tests/gpu/test_engine_gpu.py -q -rA -p no:cacheprovider \
    -k "(test_gemv and qkv) or test_plan_variants_decode_the_same_bits" 2>&1 | grep -v "TileLang:" > "$R/tests.log"
  grep -E "^(FAILED|ERROR)|passed|failed" "$R/tests.log" | cut -c1-200 | tail -6; pack
  timeout 240 python3 -m tfdash bench --backends tilelang-graph,tilelang-qtlate,torch-compile \
    --json "$R/bench-qwen3-1.7b.json" 2>&1 | grep -v "TileLang:" > "$R/bench-qwen3-1.7b.log"; tail -5 "$R/bench-qwen3-1.7b.log" | cut -c1-160; pack
  timeout 120 python3 -m tfdash bench --model qwen3-0.6b --backends tilelang-graph,tilelang-qtlate \
    --json "$R/bench-qwen3-0.6b.json" 2>&1 | grep -v "TileLang:" > "$R/bench-qwen3-0.6b.log"; tail -4 "$R/bench-qwen3-0.6b.log" | cut -c1-160; pack
  timeout 200 python3 -m tfdash bench --model qwen3-8b --backends tilelang-graph --gemv qkv_proj:trigger_first=1 \
    --json "$R/bench-qwen3-8b.json" 2>&1 | grep -v "TileLang:" > "$R/bench-qwen3-8b.log"; tail -4 "$R/bench-qwen3-8b.log" | cut -c1-160; pack
fi
if [ "$what" = land19 ]; then
  # argmax storing each token into the pinned ring from inside the graph, by default: the ring's and
  # the variants' GPU tests, the profiling GPU tests (kernel names), the 1.7B headline with
  # torch-compile and the copy after the replay (tilelang-ringcopy), then 0.6B's A/B (about 9 minutes)
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  timeout 240 python3 -m pytest -m gpu tests/gpu/test_engine_gpu.py -q -rA -p no:cacheprovider \
    -k "ring or test_plan_variants_decode_the_same_bits or test_step_matches_reference" 2>&1 | grep -v "TileLang:" > "$R/tests.log"
  grep -E "^(FAILED|ERROR)|passed|failed" "$R/tests.log" | cut -c1-200 | tail -6; pack
  timeout 150 python3 -m pytest -m gpu tests/test_profiling_gpu.py tests/gpu/test_continuous_gpu.py -q -rA -p no:cacheprovider 2>&1 | grep -v "TileLang:" \
    > "$R/profiling-tests.log"; grep -E "^(FAILED|ERROR)|passed|failed" "$R/profiling-tests.log" | cut -c1-200 | tail -6; pack
  timeout 260 python3 -m tfdash bench --backends tilelang-graph,tilelang-ringcopy,torch-compile \
    --json "$R/bench-qwen3-1.7b.json" 2>&1 | grep -v "TileLang:" > "$R/bench-qwen3-1.7b.log"; tail -5 "$R/bench-qwen3-1.7b.log" | cut -c1-160; pack
  timeout 120 python3 -m tfdash bench --model qwen3-0.6b --backends tilelang-graph,tilelang-ringcopy \
    --json "$R/bench-qwen3-0.6b.json" 2>&1 | grep -v "TileLang:" > "$R/bench-qwen3-0.6b.log"; tail -4 "$R/bench-qwen3-0.6b.log" | cut -c1-160; pack
fi
if [ "$what" = order ]; then
  # which part of an engine's state carries the ~1.7 % between identical engines: runtimes on one
  # plan's weights with their own small state, and with their own KV cache (scripts/placement.py;
  # about 4 minutes fresh), MODEL=... TRIES=... ROUNDS=... to change
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  timeout 400 python3 scripts/placement.py --model ${MODEL:-qwen3-1.7b} --tries ${TRIES:-3} --rounds ${ROUNDS:-2} 2>&1 \
    | grep --line-buffered -v "TileLang:" > "$R/placement.log"
  tail -12 "$R/placement.log" | cut -c1-160; pack
fi
if [ "$what" = land23 ]; then
  # attention's score and value phases as independent chains by default: the kernel against its torch
  # spelling at every size (and the chains baseline), the 1.7B (4 rounds) and 0.6B (3 rounds) A/Bs
  # against tilelang-chains, then every attention kernel test and the steps against the reference
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  timeout 200 python3 scripts/precompile.py --only-default --sizes qwen3-1.7b,qwen3-0.6b --variants tilelang-chains 2>&1 \
    | grep -v "TileLang:" > "$R/precompile.log"; tail -1 "$R/precompile.log"
  timeout 150 python3 -m pytest -m gpu tests/gpu/test_kernels_gpu.py -q -rA -p no:cacheprovider -k "attention_at_every_size" 2>&1 \
    | grep -v "TileLang:" > "$R/tests-sizes.log"; grep -E "^(FAILED|ERROR|E  )|passed|failed" "$R/tests-sizes.log" | cut -c1-200 | tail -6; pack
  timeout 200 python3 -m tfdash bench --rounds 4 --backends tilelang-graph,tilelang-chains --json "$R/bench-qwen3-1.7b.json" 2>&1 \
    | grep -v "TileLang:" > "$R/bench-qwen3-1.7b.log"; tail -4 "$R/bench-qwen3-1.7b.log" | cut -c1-160; pack
  timeout 120 python3 -m tfdash bench --model qwen3-0.6b --rounds 3 --backends tilelang-graph,tilelang-chains \
    --json "$R/bench-qwen3-0.6b.json" 2>&1 | grep -v "TileLang:" > "$R/bench-qwen3-0.6b.log"; tail -3 "$R/bench-qwen3-0.6b.log" | cut -c1-160; pack
  timeout 150 python3 -m pytest -m gpu tests/gpu/test_kernels_gpu.py -q -rA -p no:cacheprovider -k "attention and not test_attention_at_every_size" 2>&1 \
    | grep -v "TileLang:" > "$R/tests.log"; grep -E "^(FAILED|ERROR|E  )|passed|failed" "$R/tests.log" | cut -c1-200 | tail -6; pack
  timeout 100 python3 -m pytest -m gpu tests/gpu/test_engine_gpu.py -q -rA -p no:cacheprovider -k "step_matches_reference and not 14b and not 32b" 2>&1 \
    | grep -v "TileLang:" > "$R/steps.log"; grep -E "^(FAILED|ERROR|E  )|passed|failed" "$R/steps.log" | cut -c1-200 | tail -6; pack
fi
if [ "$what" = land27 ]; then
  # attention's rounds carrying q and the next round's K/V by default: A/B against the baseline
  # (tilelang-eachround) at 4096 new tokens, 1.7B then 0.6B, 2 rounds (its kernel tests ran on the
  # same kernels at commit 70529b6, where the carry was a bench backend)
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  timeout 100 python3 scripts/precompile.py --only-default --sizes qwen3-1.7b,qwen3-0.6b \
    --variants tilelang-eachround 2>&1 | grep -v "TileLang:" > "$R/precompile.log"; tail -1 "$R/precompile.log"
  for m in qwen3-1.7b qwen3-0.6b; do
    timeout 100 python3 -m tfdash bench --model $m --rounds 2 --max-new-tokens 4096 \
      --backends tilelang-graph,tilelang-eachround \
      --json "$R/bench-4096-$m.json" 2>&1 | grep -v "TileLang:" > "$R/bench-4096-$m.log"; tail -3 "$R/bench-4096-$m.log" | cut -c1-160; pack
  done
fi
if [ "$what" = arena29 ]; then
  # scattered small state against arenas aligning each buffer to 512 B, 4 KiB and 64 KiB (about 3 minutes;
  # MODEL= and ALIGNS= pick others)
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  timeout 60 python3 scripts/precompile.py --only-default --sizes ${MODEL:-qwen3-1.7b} 2>&1 | grep -v "TileLang:" | tail -1
  timeout 300 python3 scripts/placement.py --model ${MODEL:-qwen3-1.7b} --tries 2 --rounds 2 --align ${ALIGNS:-512,4096,65536} $PLACE 2>&1 \
    | grep --line-buffered -v "TileLang:" > "$R/placement.log"
  tail -${TAIL:-8} "$R/placement.log" | cut -c1-160; pack
fi
if [ "$what" = procs ]; then
  # the same default plan in N processes one after another on one machine, with the small state in its
  # 4 KiB arena and scattered (TFDASH_STATE_ARENA=0), alternating: does the arena also pin the spread
  # between processes, which placement.py's runtimes in one process cannot show (about 6 minutes
  # for N=4 at 1.7B; MODEL=, N=)
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  timeout 60 python3 scripts/precompile.py --only-default --sizes ${MODEL:-qwen3-1.7b} 2>&1 | grep -v "TileLang:" | tail -1
  for i in $(seq 1 ${N:-4}); do
    for arena in 4096 0; do
      TFDASH_STATE_ARENA=$arena timeout 60 python3 -m tfdash bench --model ${MODEL:-qwen3-1.7b} --rounds 2 \
        --backends tilelang-graph --json "$R/bench-$arena-$i.json" 2>&1 | grep -v "TileLang:" > "$R/bench-$arena-$i.log"
      echo "arena $arena process $i: $(grep '^tilelang-graph' "$R/bench-$arena-$i.log" | awk '{print $2}') tok/s"
    done
  done | tee "$R/procs.txt"; pack
fi
if [ "$what" = land29 ]; then
  # the 4 KiB arena by default (about 4 minutes): the 1.7B steps against the reference, the ring and
  # graphs taking turns on one state; then the 1.7B and 0.6B default benched (3 rounds each)
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  timeout 60 python3 scripts/precompile.py --only-default --sizes qwen3-1.7b,qwen3-0.6b 2>&1 | grep -v "TileLang:" | tail -1
  timeout 150 python3 -m pytest -m gpu -v -p no:cacheprovider tests/gpu/test_engine_gpu.py \
    -k "test_step_matches_reference or step_in_rounds or ring or taking_turns" 2>&1 | grep --line-buffered -v "TileLang:" \
    > "$R/tests.log"; tail -1 "$R/tests.log"; pack
  for m in qwen3-1.7b qwen3-0.6b; do
    timeout 60 python3 -m tfdash bench --model $m --rounds 3 --backends tilelang-graph --json "$R/bench-$m.json" 2>&1 \
      | grep -v "TileLang:" > "$R/bench-$m.log"; tail -2 "$R/bench-$m.log" | cut -c1-150; pack
  done
fi
if [ "$what" = curve ]; then
  # does the decode loop cost the GPU time: a generation's ring-event step times against back-to-back
  # replays, binned by position, at 1.7B and 0.6B (scripts/step_curve.py), SIZES="..." to pick
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  python3 scripts/precompile.py --only-default --sizes $(echo ${SIZES:-qwen3-1.7b qwen3-0.6b} | tr ' ' ',') 2>&1 | grep precompiled
  for m in ${SIZES:-qwen3-1.7b qwen3-0.6b}; do
    timeout 200 python3 scripts/step_curve.py --model "$m" --out "$R/step_curve-$m.json" 2>&1 | grep -v "TileLang:" \
      > "$R/step_curve-$m.log"; echo "== $m"; tail -24 "$R/step_curve-$m.log" | cut -c1-120; pack
  done
fi
if [ "$what" = sass ]; then
  # attention's SASS (and the GEMVs') and where its warps stall inside the replayed graph at ctx
  # 1024 (Nsight Compute's per-instruction warp-state samples; under ncu each kernel runs alone)
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  NCU=/usr/local/cuda/bin/ncu
  timeout 200 python3 scripts/kernel_sass.py build --families attention,gemv --out "$R" 2>&1 | grep -v "TileLang:" | tail -8; pack
  timeout 300 $NCU --clock-control none --graph-profiling node --kernel-name regex:attn --launch-skip 56 --launch-count 4 \
    --section SourceCounters --section WarpStateStats --section LaunchStats --warp-sampling-interval 0 -o "$R/attn" \
    python3 scripts/kernel_sass.py replay > "$R/ncu.log" 2>&1; grep -v "TileLang:" "$R/ncu.log" | tail -4
  $NCU --import "$R/attn.ncu-rep" --page source --csv --print-source sass > "$R/attn-source.csv" 2> "$R/ncu-source.err"
  $NCU --import "$R/attn.ncu-rep" --page details --csv > "$R/attn-details.csv" 2>> "$R/ncu-source.err"
  python3 scripts/kernel_sass.py stalls --csv "$R/attn-source.csv" --out "$R/attn-stalls.txt"
  wc -l "$R/attn-source.csv" "$R/attn-details.csv"; tail -2 "$R/ncu-source.err"; pack
fi
if [ "$what" = same3 ]; then
  # three backends of one plan at 1.7B (qtlate and tdep build the default plan there): does the
  # engine built first still run slowest on one shared state? ROUNDS picks the rounds (4)
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  timeout 400 python3 -m tfdash bench --rounds "${ROUNDS:-4}" --backends tilelang-qtlate,tilelang-graph,tilelang-tdep \
    --json "$R/bench-same3.json" 2>&1 | grep -v "TileLang:" > "$R/bench-same3.log"; tail -5 "$R/bench-same3.log" | cut -c1-160; pack
fi
if [ "$what" = headline ]; then
  # the README's table on today's default plan: the unfused attention's and continuous timing's GPU
  # tests (TESTS="..." to pick others), the 1.7B bench with the torch-compile peer and the plan
  # before (tilelang-chains), then each size's bench against the plan before, SIZES="..." to pick
  # (OTHERS="tilelang-graph,tilelang-chains,torch-graph" adds the peer: then one size or two a call,
  # NO17=1 to leave out the 1.7B bench and TESTS=none the tests); precompiles the sizes it benches
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  python3 scripts/precompile.py --only-default --sizes $(echo ${NO17:-qwen3-1.7b} ${SIZES:-qwen3-0.6b qwen3-4b qwen3-8b} \
    | sed 's/^1 //' | tr ' ' ',') 2>&1 | grep -v "TileLang:" > "$R/precompile.log"; tail -1 "$R/precompile.log"
  [ "${TESTS:-}" != none ] && timeout 150 python3 -m pytest -m gpu ${TESTS:-tests/gpu/test_kernels_gpu.py::test_attention tests/gpu/test_continuous_gpu.py} -q -rA \
    -p no:cacheprovider 2>&1 | grep -v "TileLang:" > "$R/tests.log"; grep -E "^(FAILED|ERROR)|passed|failed" "$R/tests.log" | cut -c1-200 | tail -8; pack
  [ -z "${NO17:-}" ] && timeout 240 python3 -m tfdash bench --backends tilelang-graph,tilelang-chains,torch-compile \
    --json "$R/bench-qwen3-1.7b.json" 2>&1 | grep -v "TileLang:" > "$R/bench-qwen3-1.7b.log" && tail -5 "$R/bench-qwen3-1.7b.log" | cut -c1-160; pack
  for m in ${SIZES:-qwen3-0.6b qwen3-4b qwen3-8b}; do
    timeout 330 python3 -m tfdash bench --model "$m" --backends ${OTHERS:-tilelang-graph,tilelang-chains} --json "$R/bench-$m.json" 2>&1 \
      | grep -v "TileLang:" > "$R/bench-$m.log"; tail -4 "$R/bench-$m.log" | cut -c1-160; pack
  done
fi
if [ "$what" = speed ]; then
  # the attention grid change and the GEMV sweep on the small sizes: attention GPU tests, then the
  # 1.7B bench with the torch-compile peer, the 4096-position cache and GEMV variants in one process
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  python3 scripts/precompile.py --only-default --sizes qwen3-1.7b,qwen3-0.6b,qwen3-4b 2>&1 | grep -v "TileLang:" > "$R/precompile.log"; tail -1 "$R/precompile.log"
  timeout 150 python3 -m pytest -m gpu tests/gpu/test_kernels_gpu.py -q -rA -p no:cacheprovider -k "attention" 2>&1 \
    | grep -v "TileLang:" > "$R/attn-tests.log"; grep -E "^(FAILED|ERROR)|passed|failed" "$R/attn-tests.log" | cut -c1-200 | tail -12; pack
  timeout 330 python3 -m tfdash bench --model qwen3-1.7b --backends tilelang-graph,torch-compile --also-capacity 4096 \
    --gemv qkv_proj:blocks_per_sm=1 --gemv qkv_proj:rows=1 --gemv o_proj:rows=1 --json "$R/bench-1.7b.json" 2>&1 \
    | grep -v "TileLang:" > "$R/bench-1.7b.log"; tail -9 "$R/bench-1.7b.log" | cut -c1-170; pack
fi
if [ "$what" = counters ]; then
  # Nsight Compute inside one replay of the 1.7B step at ctx_len 512: launches 0-5 and 141-142, two ncu runs
  timeout 300 python3 -m tfdash counters --all --layers 0 --json "$OUT/counters-1.7b.json" 2>&1 \
    | grep -v "TileLang:" | tee "$OUT/counters.log" | tail -14
fi
if [ "$what" = features ]; then
  # the session-5 features on the H200, most important first, packed after each part: the split-cap
  # attention tests, the C CUPTI ring probe, continuous timing against headless, tfdash counters on
  # layer 0, the headless live A/B
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  python3 scripts/precompile.py --only-default --sizes qwen3-1.7b 2>&1 | grep -v "TileLang:" > "$R/precompile.log"; tail -1 "$R/precompile.log"
  timeout 60 python3 -m pytest -m gpu tests/gpu/test_kernels_gpu.py -q -rA -p no:cacheprovider -k "grid_rounds" 2>&1 \
    | grep -v "TileLang:" > "$R/attn-tests.log"; grep -E "^(FAILED|ERROR)|passed|failed" "$R/attn-tests.log" | cut -c1-200 | tail -4; pack
  timeout 60 python3 scripts/gpu_cupti_ring_probe.py --out "$R/ring_probe.json" > "$R/ring_probe.log" 2>&1; tail -12 "$R/ring_probe.log" | cut -c1-220; pack
  timeout 170 python3 scripts/gpu_continuous_check.py --out "$R/continuous_check.json" > "$R/continuous_check.log" 2>&1
  grep -v "TileLang:" "$R/continuous_check.log" | tail -24 | cut -c1-220; pack
  timeout 140 python3 -m tfdash counters --all --layers 0 --json "$R/counters-1.7b.json" > "$R/counters.log" 2>&1
  grep -v "TileLang:" "$R/counters.log" | tail -14 | cut -c1-220; pack
  timeout 90 python3 -m tfdash --headless --ab tilelang-lateres --max-new-tokens 8192 --ignore-eos > "$R/ab.log" 2>&1
  grep -v "TileLang:" "$R/ab.log" | tail -14 | cut -c1-220; pack
fi
if [ "$what" = overhead ]; then
  # the dashboard's cost against headless on the 1.7B shape (issue 13), with each run's step p99 and
  # stalls (steps over twice the p50): under continuous timing (the default), then under windows
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  python3 scripts/precompile.py --only-default --sizes qwen3-1.7b 2>&1 | grep -v "TileLang:" > "$R/precompile.log"; tail -1 "$R/precompile.log"
  timeout 240 python3 scripts/gpu_app_check.py --skip-midrun --rounds 5 --out-dir "$R/continuous" 2>&1 | grep -v "TileLang:" | tail -6 | cut -c1-400; pack
  TFDASH_TIMING=windows timeout 200 python3 scripts/gpu_app_check.py --skip-midrun --rounds 3 --out-dir "$R/windows" 2>&1 | grep -v "TileLang:" | tail -6 | cut -c1-400; pack
fi
if [ "$what" = next ]; then
  # what session 11 leaves (issue 12, then 11), about 7 minutes: two variants that shorten the
  # chain after a kernel's grid dependency, bit for bit the default's arithmetic. early_norm: norm
  # weights and attention's cos/sin read before it; acqrel: attention's splits arrive with one
  # acquire-release atomic, no fences; enar: both. Their kernels against torch, their graphs bit
  # for bit against the default's, then the A/B at 1.7B, 0.6B and 4B in one process each;
  # `inflight32` is the other call (32B's GEMVs with more loads in flight)
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  V=tilelang-latenorm,tilelang-fenced  # since session 12 the default has both; these are the baselines
  python3 scripts/precompile.py --only-default --sizes qwen3-1.7b,qwen3-0.6b,qwen3-4b --variants $V 2>&1 \
    | grep -v "TileLang:" > "$R/precompile.log"; tail -1 "$R/precompile.log"
  timeout 180 python3 -m pytest -m gpu tests/gpu/test_kernels_gpu.py tests/gpu/test_engine_gpu.py -q -rA -p no:cacheprovider \
    -k "late_norm or latenorm or fenced or test_plan_variants_decode_the_same_bits" 2>&1 | grep -v "TileLang:" > "$R/variant-tests.log"
  grep -E "^(FAILED|ERROR)|passed|failed" "$R/variant-tests.log" | cut -c1-200 | tail -6; pack
  # and 0.6B's qkv_proj with 12 or 16 loads in flight a lane (the rule's 2 x 4 keeps 8; 4 rows took
  # 143 registers, 121 under launch bounds of 2 blocks, 3 rows 72: ptxas for sm_90a on CPU)
  G06="--gemv qkv_proj:rows=4,seg=4,min_blocks=2 --gemv qkv_proj:rows=3,seg=4"
  python3 scripts/precompile.py --only-default --sizes qwen3-0.6b $G06 2>&1 | grep -v "TileLang:" >> "$R/precompile.log"
  for m in qwen3-1.7b qwen3-0.6b qwen3-4b; do
    extra=""; [ $m = qwen3-0.6b ] && extra=$G06
    timeout 200 python3 -m tfdash bench --model $m --backends tilelang-graph,$V $extra --json "$R/bench-$m-variants.json" 2>&1 \
      | grep -v "TileLang:" > "$R/bench-$m-variants.log"; tail -5 "$R/bench-$m-variants.log" | cut -c1-150; pack
  done
fi
if [ "$what" = inflight32 ]; then
  # 32B's qkv_proj and gate_up with the settings that won at 4B and 14B (3 rows x 5 chunks, 2 x 10:
  # 15 and 20 loads in flight a lane, 96 and 116 registers) against the rule's (1 x 10), in one
  # process, about 6 minutes; its lm_head is 14B's, in the table already
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  NEW="qkv_proj:rows=3,seg=5+gate_up:rows=2,seg=10"
  python3 scripts/precompile.py --only-default --sizes qwen3-32b --gemv "$NEW" 2>&1 | grep -v "TileLang:" > "$R/precompile.log"
  grep precompiled "$R/precompile.log"
  timeout 420 python3 -m tfdash bench --model qwen3-32b --backends tilelang-graph --gemv "$NEW" \
    --json "$R/bench-qwen3-32b.json" 2>&1 | grep -v "TileLang:" > "$R/bench-qwen3-32b.log"; tail -4 "$R/bench-qwen3-32b.log" | cut -c1-150; pack
fi
if [ "$what" = inflight ]; then
  # GEMVs with more 16-byte weight loads in flight a lane (rows x seg near 16 or more: 1.7B's
  # lm_head at 16 streams at the copy ceiling, 4B's at 10 and 0.6B's at 8 do not), A/B of the whole
  # step in one process at 4B, 0.6B and 1.7B; ptxas on CPU: every variant fits its blocks per SM
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  G4="lm_head:rows=2,seg=10 lm_head:rows=4,seg=5 qkv_proj:rows=3,seg=5 qkv_proj:rows=2,seg=10 gate_up:rows=2,seg=10
      gate_up:rows=4,seg=5 down:rows=2,seg=8,blocks_per_sm=2 o_proj:rows=2,seg=8
      lm_head:rows=2,seg=10+qkv_proj:rows=3,seg=5+gate_up:rows=2,seg=10+down:rows=2,seg=8,blocks_per_sm=2+o_proj:rows=2,seg=8"
  G06="lm_head:rows=4,seg=4 lm_head:rows=3,seg=4"
  G17="down:trigger_first=1,blocks_per_sm=3 down:rows=2,seg=8 lm_head:rows=3,seg=8"
  args() { for g in $1; do printf -- "--gemv %s " "$g"; done; }
  { python3 scripts/precompile.py --only-default --sizes qwen3-4b $(args "$G4");
    python3 scripts/precompile.py --only-default --sizes qwen3-0.6b $(args "$G06");
    python3 scripts/precompile.py --only-default --sizes qwen3-1.7b $(args "$G17"); } 2>&1 | grep -v "TileLang:" > "$R/precompile.log"
  grep precompiled "$R/precompile.log"; pack
  for m in 4 06 17; do
    case $m in 4) model=qwen3-4b; G=$G4;; 06) model=qwen3-0.6b; G=$G06;; 17) model=qwen3-1.7b; G=$G17;; esac
    timeout 330 python3 -m tfdash bench --model $model --backends tilelang-graph $(args "$G") --json "$R/bench-$model-inflight.json" 2>&1 \
      | grep -v "TileLang:" > "$R/bench-$model-inflight.log"; tail -12 "$R/bench-$model-inflight.log" | cut -c1-150; pack
  done
fi
if [ "$what" = confirm ]; then
  # the GEMV table's session-11 entries in the default plan (4B qkv, gate_up and lm_head; 0.6B
  # lm_head): their GEMVs and lm_head+argmax against torch, each size's step against the reference
  # at ctx 0, 1 and 1024, then each size's bench with the torch-graph peer, and 4B's down variants
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  D4="down:seg=19,blocks_per_sm=2 down:trigger_first=1"
  args() { for g in $1; do printf -- "--gemv %s " "$g"; done; }
  python3 scripts/precompile.py --only-default --sizes qwen3-4b,qwen3-0.6b $(args "$D4") 2>&1 | grep -v "TileLang:" > "$R/precompile.log"
  grep precompiled "$R/precompile.log"
  timeout 150 python3 -m pytest -m gpu tests/gpu/test_kernels_gpu.py -q -rA -p no:cacheprovider \
    -k "(test_gemv_at_every_size or test_lm_head_and_argmax_feed) and (qwen3-0.6b or qwen3-4b)" 2>&1 | grep -v "TileLang:" > "$R/kernel-tests.log"
  grep -E "^(FAILED|ERROR)|passed|failed" "$R/kernel-tests.log" | cut -c1-200 | tail -6; pack
  timeout 200 python3 -m pytest -m gpu tests/gpu/test_engine_gpu.py -q -rA -s -p no:cacheprovider \
    -k "test_every_size_step_matches_reference and (qwen3-0.6b or qwen3-4b)" 2>&1 | grep -v "TileLang:" > "$R/engine-tests.log"
  grep -E "^(FAILED|ERROR)|passed|failed|cosine" "$R/engine-tests.log" | cut -c1-200 | tail -10; pack
  timeout 240 python3 -m tfdash bench --model qwen3-4b --backends tilelang-graph,torch-graph $(args "$D4") \
    --json "$R/bench-qwen3-4b.json" 2>&1 | grep -v "TileLang:" > "$R/bench-qwen3-4b.log"; tail -6 "$R/bench-qwen3-4b.log" | cut -c1-150; pack
  timeout 120 python3 -m tfdash bench --model qwen3-0.6b --backends tilelang-graph,torch-graph \
    --json "$R/bench-qwen3-0.6b.json" 2>&1 | grep -v "TileLang:" > "$R/bench-qwen3-0.6b.log"; tail -4 "$R/bench-qwen3-0.6b.log" | cut -c1-150; pack
fi
if [ "$what" = inflight14 ]; then
  # 14B's table entries (qkv_proj 3 rows x 5 chunks, gate_up and lm_head 2 x 10) in the default plan:
  # their GEMVs and lm_head+argmax against torch, the 14B step against the reference, then the
  # bench against the rule's settings for all three (1 row x 10 chunks), in one process
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  OLD="qkv_proj:rows=1,seg=10+gate_up:rows=1,seg=10+lm_head:rows=1,seg=10"
  python3 scripts/precompile.py --only-default --sizes qwen3-14b --gemv "$OLD" 2>&1 | grep -v "TileLang:" > "$R/precompile.log"
  grep precompiled "$R/precompile.log"
  timeout 120 python3 -m pytest -m gpu tests/gpu/test_kernels_gpu.py -q -rA -p no:cacheprovider \
    -k "(test_gemv_at_every_size or test_lm_head_and_argmax_feed) and qwen3-14b" 2>&1 | grep -v "TileLang:" > "$R/kernel-tests.log"
  grep -E "^(FAILED|ERROR)|passed|failed" "$R/kernel-tests.log" | cut -c1-200 | tail -6; pack
  timeout 300 python3 -m tfdash bench --model qwen3-14b --backends tilelang-graph --gemv "$OLD" \
    --json "$R/bench-qwen3-14b.json" 2>&1 | grep -v "TileLang:" > "$R/bench-qwen3-14b.log"; tail -5 "$R/bench-qwen3-14b.log" | cut -c1-150; pack
  timeout 150 python3 -m pytest -m gpu tests/gpu/test_engine_gpu.py -q -rA -s -p no:cacheprovider \
    -k "test_every_size_step_matches_reference and qwen3-14b" 2>&1 | grep -v "TileLang:" > "$R/engine-tests.log"
  grep -E "^(FAILED|ERROR)|passed|failed|cosine" "$R/engine-tests.log" | cut -c1-200 | tail -6; pack
fi
if [ "$what" = where ]; then
  # where each size's step loses time: per-op exclusive us against each op's floor, and the spans
  # of a middle layer, for the sizes in $SIZES (default 0.6B and 4B), beside the plan variants in
  # $VARIANTS (comma-separated bench backends)
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  python3 scripts/precompile.py --only-default --sizes $(echo ${SIZES:-qwen3-0.6b qwen3-4b} | tr ' ' ',') 2>&1 | grep precompiled
  for m in ${SIZES:-qwen3-0.6b qwen3-4b}; do
    timeout 200 python3 scripts/kernel_times.py --model "$m" --variants "${VARIANTS:-}" --out "$R/kernel_times-$m.json" 2>&1 \
      | grep -v "TileLang:\|compiled\|Warn\|_warn" \
      > "$R/kernel_times-$m.log"; echo "== $m"; head -40 "$R/kernel_times-$m.log" | cut -c1-160; pack
  done
fi
if [ "$what" = tails ]; then
  # GEMV grids whose rows do not spread evenly over their warps (grid-stride, one row a warp at a
  # time): 4B's o_proj and down (2560 rows over 2112 warps: most do one row, 448 do two) and 0.6B's
  # gate_up (3072 row pairs over 2112 warps); each against grids that even them out, A/B in one process
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  timeout 400 python3 -m tfdash bench --model qwen3-4b --backends tilelang-graph --gemv o_proj:blocks_per_sm=1 \
    --gemv o_proj:seg=8,blocks_per_sm=3 --gemv down:blocks_per_sm=1 --gemv down:blocks_per_sm=3 \
    --gemv o_proj:blocks_per_sm=1+down:blocks_per_sm=1 --gemv o_proj:seg=8,blocks_per_sm=3+down:blocks_per_sm=3 \
    --json "$R/bench-4b-tails.json" 2>&1 | grep -v "TileLang:" > "$R/bench-4b-tails.log"; tail -8 "$R/bench-4b-tails.log" | cut -c1-160; pack
  timeout 150 python3 -m tfdash bench --model qwen3-0.6b --backends tilelang-graph --gemv gate_up:blocks_per_sm=3 \
    --gemv gate_up:blocks_per_sm=1 --json "$R/bench-0.6b-tails.json" 2>&1 | grep -v "TileLang:" > "$R/bench-0.6b-tails.log"
  tail -6 "$R/bench-0.6b-tails.log" | cut -c1-160; pack
fi
if [ "$what" = tails14 ]; then
  # 14B's qkv (7168 rows), o_proj and down (5120 each) over 2112 warps leave their last round 39-42 %
  # busy; at one block an SM (1056 warps) every round but the last is full and the last 79-85 %
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  timeout 560 python3 -m tfdash bench --model qwen3-14b --backends tilelang-graph \
    --gemv o_proj:blocks_per_sm=1+down:blocks_per_sm=1 --gemv qkv_proj:blocks_per_sm=1+o_proj:blocks_per_sm=1+down:blocks_per_sm=1 \
    --json "$R/bench-14b-tails.json" 2>&1 | grep -v "TileLang:" > "$R/bench-14b-tails.log"; tail -6 "$R/bench-14b-tails.log" | cut -c1-160; pack
fi
if [ "$what" = tables ]; then
  # the GEMV table's 0.6B gate_up and 4B down entries (3 blocks an SM) in the default plan: their
  # GEMVs against torch and each size's step against the reference, then each bench against the
  # entry's old setting (blocks_per_sm=2, the rule) in one process
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  python3 scripts/precompile.py --only-default --sizes qwen3-0.6b,qwen3-4b 2>&1 | grep -v "TileLang:" > "$R/precompile.log"; tail -1 "$R/precompile.log"
  timeout 100 python3 -m pytest -m gpu tests/gpu/test_kernels_gpu.py tests/gpu/test_engine_gpu.py -q -rA -p no:cacheprovider \
    -k "(test_gemv_at_every_size or test_every_size_step) and (qwen3-0.6b or qwen3-4b)" 2>&1 | grep -v "TileLang:" > "$R/tables-tests.log"
  grep -E "^(FAILED|ERROR)|passed|failed" "$R/tables-tests.log" | cut -c1-200 | tail -6; pack
  timeout 60 python3 -m tfdash bench --model qwen3-0.6b --backends tilelang-graph --gemv gate_up:blocks_per_sm=2 --json "$R/bench-0.6b.json" 2>&1 \
    | grep -v "TileLang:" > "$R/bench-0.6b.log"; tail -3 "$R/bench-0.6b.log" | cut -c1-160; pack
  timeout 90 python3 -m tfdash bench --model qwen3-4b --backends tilelang-graph --gemv down:blocks_per_sm=2 --json "$R/bench-4b.json" 2>&1 \
    | grep -v "TileLang:" > "$R/bench-4b.log"; tail -3 "$R/bench-4b.log" | cut -c1-160; pack
fi
if [ "$what" = app ]; then
  mkdir -p "$OUT/app"
  python3 scripts/gpu_app_check.py --out-dir "$OUT/app" 2>&1 | grep -v "TileLang:" | tee "$OUT/app/log.txt" | tail -8
fi
