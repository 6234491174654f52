#!/usr/bin/env bash
# One device call on the H200: GPU tests, then `tfdash bench`, logs and JSON under $OUT.
#   run with carry [".gpu"]:  bash scripts/h200_check.sh MODE [extra bench args]
# Modes (each block below says what it runs and about how long):
#   tests, diag, bench, all      the GPU tests (TESTS_K= filters), a diagnosis, `tfdash bench`; all = the three
#   headless, engine             a headless run; engine = bench, headless run and GPU tests
#   final                        the whole GPU suite at every size (kernel tests in 4 processes)
#   sizes, sizebench             every size compiled and tested; bench per size (SIZES="..." to pick)
#   headline                     the README's bench table on today's plan (1.7B with torch-compile;
#                                BACKENDS17= the 1.7B peers, OTHERS= the other sizes' peers)
#   where                        per-op exclusive us against each op's floor (SIZES=, VARIANTS=)
#   probe, sass                  attention's phases alone; its SASS and warp stalls under ncu
#   curve                        a generation's step times against back-to-back replays by position
#   same3                        three backends of one plan built in turn on one state
#   arena29                      placement.py: small state scattered against arenas by alignment
#                                (MODEL=, ALIGNS=512,4096,...; PLACE=--weights own weights, scattered and
#                                packed; PLACE=--modules own loads of the kernels' code; TAIL= lines shown)
#   procs                        the default plan in N processes, arena against scattered (MODEL=, N=)
#   next30                       arena29 with PLACE=--modules ALIGNS=4096, then procs (one call)
#   land29                       the 1.7B steps tested, then 1.7B and 0.6B benched
#   next35                       issue 12's bench at 1.7B (torch-compile and torch-graph peers, --also-capacity 4096;
#                                BACKENDS35= others), the 0.6B default alone, the int8 head's kernel tests
#   bar12                        issue 12's bench alone: 1.7B against torch-compile, --also-capacity 4096
#   peer                         where the torch-compile peer's step goes, form by form (scripts/peer_kernels.py,
#                                FORMS= its --forms; about 6 minutes, compiling each form)
#   ladder                       the default 1.7B plan's correctness ladder and the profiler's accounting
#   lowctx                       each launch's exclusive time from ctx 64 and from ctx 600 (MODEL=)
#   stamps                       the ring's clock stamps: their tests, the profiler's accounting, and the default against
#                                tilelang-ringevents (timed events) at 1.7B and 0.6B
#   tick                         how fine the global timer the ring's stamps read is (scripts/timer_tick.py)
#   boundary                     what a step's boundary costs (scripts/step_boundary.py): the event after each replay,
#                                timed and not, at 1.7B and 0.6B (SIZES=)
#   profile, observe, app, dash  the profiler, the dashboard (mid-run SVG, snapshot, A/B) and a real pty
#   check47                      the profiler's, continuous timing's and counters' GPU tests, then `dash` (about 8 min;
#                                any GPU): the session's windows, the ncu worker's cancel and the dashboard on CUDA
#   tty                          dash's real pty alone (`tfdash` on CUDA: nothing leaked, its stderr log; ~2 minutes)
#   live, overhead, features     the dashboard's keys; its cost against headless; session 5's features
#   counters                     tfdash counters on one layer plus embed, lm_head and argmax
# Needs the offline bundle (../shared/gpu-bundle .gpu/site.tar.xz). The tilelang kernel cache
# lives in .tlcache/ (ignored, not carried), so a warm machine reuses it between calls.
set -u
what=${1:-all}; shift || true
MODES=" tests diag bench all headless engine final sizes sizebench headline where probe sass curve same3 arena29 procs next30 next35 bar12 peer ladder lowctx boundary tick stamps land29 profile observe app dash tty live overhead features counters check47 "
case "$MODES" in *" $what "*) ;; *) echo "h200_check.sh: unknown mode '$what' (modes:$MODES)" >&2; exit 2 ;; esac
if [ "$what" = next30 ]; then  # what session 29 leaves, in one call (about 6 minutes): arena29's modules and procs
  N=${N:-4} PLACE=${PLACE:---modules} ALIGNS=${ALIGNS:-4096} TAIL=${TAIL:-12}
fi
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
if [ "$what" = check47 ]; then
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  timeout 240 python3 -m pytest -m gpu tests/test_profiling_gpu.py tests/gpu/test_continuous_gpu.py tests/gpu/test_counters_gpu.py \
    -q -rA -p no:cacheprovider 2>&1 | grep -v "TileLang:" > "$R/gpu-tests.log"
  grep -E "^(FAILED|ERROR)|passed|failed" "$R/gpu-tests.log" | cut -c1-200 | tail -10; pack
  timeout 200 python3 scripts/gpu_app_check.py --out-dir "$R/app" 2>&1 | grep -v "TileLang:" > "$R/app.log"; tail -4 "$R/app.log"; pack
  timeout 130 python3 scripts/gpu_tty_check.py --out-dir "$R/tty" > "$R/tty.log" 2>&1; cut -c1-200 "$R/tty.log"; pack
fi
if [ "$what" = tty ]; then
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
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
if [ "$what" = probe ]; then
  # the fused attention's phases alone (scripts/attn_phases.py) at 1.7B and 0.6B, ctx 1024 and 256
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  python3 scripts/precompile.py --only-default --sizes qwen3-1.7b,qwen3-0.6b 2>&1 | grep -v "TileLang:" > "$R/precompile.log"
  for m in qwen3-1.7b qwen3-0.6b; do for c in 1024 256; do
    timeout 100 python3 scripts/attn_phases.py --model $m --ctx $c ${PROBE_VARIANTS:+--variants $PROBE_VARIANTS} \
      --out "$R/phases-$m-$c.json" 2>&1 | grep -v "TileLang:\|compiled" > "$R/phases-$m-$c.log"; tail -11 "$R/phases-$m-$c.log" | cut -c1-160; pack
  done; done
fi
if [ "$what" = arena29 ] || [ "$what" = next30 ]; then
  # scattered small state against arenas aligning each buffer to 512 B, 4 KiB and 64 KiB (about 3 minutes;
  # MODEL= and ALIGNS= pick others)
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  timeout 60 python3 scripts/precompile.py --only-default --sizes ${MODEL:-qwen3-1.7b} 2>&1 | grep -v "TileLang:" | tail -1
  timeout 300 python3 scripts/placement.py --model ${MODEL:-qwen3-1.7b} --tries 2 --rounds 2 --align ${ALIGNS:-512,4096,65536} ${PLACE:-} 2>&1 \
    | grep --line-buffered -v "TileLang:" > "$R/placement.log"
  tail -${TAIL:-8} "$R/placement.log" | cut -c1-160; pack
fi
if [ "$what" = procs ] || [ "$what" = next30 ]; then
  # the same default plan in N processes one after another on one machine, with the small state in its
  # 4 KiB arena and scattered (TFDASH_STATE_ARENA=0), alternating: does the arena also pin the spread
  # between processes, which placement.py's runtimes in one process cannot show (about 4 minutes
  # for N=4 at 1.7B; MODEL=, N=)
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  timeout 60 python3 scripts/precompile.py --only-default --sizes ${MODEL:-qwen3-1.7b} 2>&1 | grep -v "TileLang:" | tail -1
  for i in $(seq 1 ${N:-4}); do
    for arena in 4096 0; do
      TFDASH_STATE_ARENA=$arena timeout 60 python3 -m tfdash bench --model ${MODEL:-qwen3-1.7b} --rounds 2 \
        --backends tilelang-graph --json "$R/bench-$arena-$i.json" 2>&1 | grep -v "TileLang:" > "$R/bench-$arena-$i.log"
      echo "arena $arena process $i: $(grep '^tilelang-graph' "$R/bench-$arena-$i.log" | awk '{print $2}') tok/s" \
        | tee -a "$R/procs.txt"; pack  # packed after each, so a cut keeps what ran
    done
  done
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
if [ "$what" = next35 ]; then
  # issue 12's and issue 11's bars and the pick's one form (about 7 minutes fresh): the 1.7B and 0.6B default
  # kernels built; issue 12's bench (`tfdash bench --rounds 3`, the torch-compile and torch-graph peers, a
  # 4096-position cache beside; BACKENDS35= others); the 0.6B default alone (issue 11's share); the int8 head's
  # kernel tests (the pick at every size, its logits and token the GEMV's bit for bit). The bars are the
  # H200's: on another GPU the tests go first, so a call cut by the device time still has them
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  q8tests() {
    timeout 90 python3 scripts/precompile.py --only-default --capacities 64 --ops lm_head,lm_head_pick,argmax 2>&1 \
      | grep -v "TileLang:" | tail -1
    timeout 150 python3 -m pytest -m gpu -v -p no:cacheprovider tests/gpu/test_lm_head_q8_gpu.py 2>&1 \
      | grep --line-buffered -v "TileLang:" > "$R/q8-tests.log"; grep -E "^(FAILED|ERROR)|passed|failed" "$R/q8-tests.log" \
      | cut -c1-200 | tail -8; pack
  }
  grep -q H200 "$OUT/gpu.txt" || q8tests
  timeout 120 python3 scripts/precompile.py --only-default --sizes qwen3-1.7b,qwen3-0.6b 2>&1 | grep -v "TileLang:" | tail -1
  timeout 330 python3 -m tfdash bench --rounds 3 --backends ${BACKENDS35:-tilelang-graph,torch-compile,torch-graph} \
    --also-capacity 4096 --json "$R/bench-qwen3-1.7b.json" 2>&1 | grep -v "TileLang:" > "$R/bench-qwen3-1.7b.log"
  grep -E "failed|^tilelang|^torch|/" "$R/bench-qwen3-1.7b.log" | grep -v "^# round" | cut -c1-160; pack
  timeout 90 python3 -m tfdash bench --model qwen3-0.6b --rounds 3 --backends tilelang-graph \
    --json "$R/bench-qwen3-0.6b.json" 2>&1 | grep -v "TileLang:" > "$R/bench-qwen3-0.6b.log"
  grep -E "failed|^tilelang" "$R/bench-qwen3-0.6b.log" | grep -v "^# round" | cut -c1-160; pack
  grep -q H200 "$OUT/gpu.txt" && q8tests
fi
if [ "$what" = bar12 ]; then
  # issue 12's bench alone (about 3 minutes warm): 1.7B's default against the torch-compile peer, a 4096-position cache beside
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  timeout 90 python3 scripts/precompile.py --only-default --sizes qwen3-1.7b --capacities 2112,4096 2>&1 \
    | grep -v "TileLang:" | tail -1
  timeout 300 python3 -m tfdash bench --rounds 3 --backends tilelang-graph,torch-compile --also-capacity 4096 \
    --json "$R/bench-qwen3-1.7b.json" 2>&1 | grep -v "TileLang:" > "$R/bench-qwen3-1.7b.log"
  grep -E "failed|^tilelang|^torch|/" "$R/bench-qwen3-1.7b.log" | grep -v "^# round" | cut -c1-160; pack
fi
if [ "$what" = peer ]; then
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  timeout ${PEER_S:-500} python3 scripts/peer_kernels.py ${FORMS:+--forms "$FORMS"} --out "$R/peer.json" 2>&1 \
    | grep --line-buffered -v "TileLang:" > "$R/peer.log"; grep -E "^(==|   )|Error" "$R/peer.log" | cut -c1-150; pack
fi
if [ "$what" = lowctx ]; then
  # why a 1.7B step at positions 0-255 took about 20 us more than at 512-767 (scripts/step_curve.py): each launch's
  # exclusive time from ctx 64 and from ctx 600 (scripts/kernel_times.py --ctx; MODEL= another size; about 5 minutes)
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  # Beside the default, gate_up launched after o_proj's grid dependency (tilelang-otlate) and, in a run of its own,
  # attention letting o_proj launch after its values (TFDASH_ATTN_TRIGGER_AT=values): if the weight prefetches that
  # start while the few active attention blocks of a short context run lengthen attention's chain, these two are
  # faster at ctx 64 and not at 600
  for c in 64 600; do
    timeout 240 python3 scripts/kernel_times.py --model "${MODEL:-qwen3-1.7b}" --ctx $c --variants tilelang-otlate \
      --out "$R/kernel_times-ctx$c.json" 2>&1 | grep -v "TileLang:" > "$R/kernel_times-ctx$c.log"
    echo "== ctx $c"; grep -E "replay|^ *(attention|o_proj|gate_up|qkv_proj|down) " "$R/kernel_times-ctx$c.log" | head -16
    TFDASH_ATTN_TRIGGER_AT=values timeout 200 python3 scripts/kernel_times.py --model "${MODEL:-qwen3-1.7b}" --ctx $c \
      --out "$R/kernel_times-ctx$c-tvalues.json" 2>&1 | grep -v "TileLang:" > "$R/kernel_times-ctx$c-tvalues.log"
    echo "== ctx $c, attention triggering after its values"; grep -E "replay" "$R/kernel_times-ctx$c-tvalues.log" | head -3; pack
  done
fi
if [ "$what" = boundary ]; then
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  for m in ${SIZES:-qwen3-1.7b qwen3-0.6b}; do
    timeout 240 python3 scripts/step_boundary.py --model "$m" --steps 1024 --rounds 5 --json "$R/boundary-$m.json" \
      2>&1 | grep -v "TileLang:" > "$R/boundary-$m.log"
    grep -v " us a step$" "$R/boundary-$m.log" | tail -9; pack
  done
fi
if [ "$what" = stamps ]; then
  # argmax stamping the clock into the ring (about 8 minutes fresh): the kernel's and the engine's GPU tests of it,
  # the profiler's accounting (a window's steps are timed by events between stamped ones), then one process a size,
  # the default against timed events (tilelang-ringevents), 3 rounds of 2048 new tokens
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  timeout 120 python3 scripts/precompile.py --only-default --sizes qwen3-1.7b,qwen3-0.6b 2>&1 | grep -v "TileLang:" | tail -1
  timeout 300 python3 -m pytest -m gpu -v -p no:cacheprovider tests/gpu/test_kernels_gpu.py tests/gpu/test_engine_gpu.py \
    -k "lm_head_and_argmax or stamped or past_a_whole_ring or ring_in_the_graph or generation_through or turns" 2>&1 \
    | grep --line-buffered -v "TileLang:" > "$R/stamps-tests.log"; grep -E "^(FAILED|ERROR)|passed|failed" \
    "$R/stamps-tests.log" | cut -c1-200 | tail -8; pack
  timeout 150 python3 scripts/gpu_profile_check.py --ctx 1000 --out "$R/profile_check.json" 2>&1 | grep -v "TileLang:" \
    > "$R/profile_check.log"; grep -E "FAIL|ERROR|sum of kernels|checks" "$R/profile_check.log" | cut -c1-160 | tail -6; pack
  # a live A/B whose B steps store into the live ring: B stamped as A is (tilelang-lateres), and B timed by events
  for v in tilelang-lateres tilelang-ringevents; do
    timeout 90 python3 -m tfdash --headless --ab $v --max-new-tokens 8192 --ignore-eos > "$R/ab-$v.log" 2>&1
    grep -E "^A/B|median|verdict|slower|faster|level|agree" "$R/ab-$v.log" | cut -c1-200 | head -6; pack
  done
  for m in ${SIZES:-qwen3-1.7b qwen3-0.6b}; do
    timeout 150 python3 -m tfdash bench --model $m --rounds 3 --backends tilelang-graph,tilelang-ringevents \
      --json "$R/bench-$m-stamps.json" 2>&1 | grep -v "TileLang:" > "$R/bench-$m-stamps.log"
    grep -E "failed|^tilelang" "$R/bench-$m-stamps.log" | grep -v "^# round" | cut -c1-160; pack
  done
fi
if [ "$what" = tick ]; then
  timeout 120 python3 scripts/timer_tick.py --json "$OUT/timer_tick.json" 2>&1 | grep -v "TileLang:" | tee "$OUT/timer_tick.log"
fi
if [ "$what" = ladder ]; then
  # the correctness ladder of the default (int8 head) 1.7B plan (the step against the reference at ctx 0, 1,
  # 255 and 1024, top-1 against transformers over 256 positions) and the profiler's accounting (about 4 minutes)
  R="$OUT/r"; mkdir -p "$R"; pack() { tar -C "$OUT" -czf "$OUT/results.tgz" r; }
  timeout 200 python3 -m pytest -m gpu -v -p no:cacheprovider tests/gpu/test_engine_gpu.py -k int8_head 2>&1 \
    | grep --line-buffered -v "TileLang:" > "$R/q8-engine-tests.log"; grep -E "^(FAILED|ERROR)|passed|failed" \
    "$R/q8-engine-tests.log" | cut -c1-200 | tail -8; pack
  timeout 150 python3 scripts/gpu_profile_check.py --out "$R/profile_check.json" 2>&1 | grep -v "TileLang:" \
    > "$R/profile_check.log"; grep -E "FAIL|ERROR|sum of kernels|checks" "$R/profile_check.log" | cut -c1-160 | tail -6; pack
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
  [ -z "${NO17:-}" ] && timeout 240 python3 -m tfdash bench --backends ${BACKENDS17:-tilelang-graph,tilelang-chains,torch-compile} \
    --json "$R/bench-qwen3-1.7b.json" 2>&1 | grep -v "TileLang:" > "$R/bench-qwen3-1.7b.log" && tail -5 "$R/bench-qwen3-1.7b.log" | cut -c1-160; pack
  for m in ${SIZES:-qwen3-0.6b qwen3-4b qwen3-8b}; do
    timeout 330 python3 -m tfdash bench --model "$m" --backends ${OTHERS:-tilelang-graph,tilelang-chains} --json "$R/bench-$m.json" 2>&1 \
      | grep -v "TileLang:" > "$R/bench-$m.log"; tail -4 "$R/bench-$m.log" | cut -c1-160; pack
  done
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
if [ "$what" = app ]; then
  mkdir -p "$OUT/app"
  python3 scripts/gpu_app_check.py --out-dir "$OUT/app" 2>&1 | grep -v "TileLang:" | tee "$OUT/app/log.txt" | tail -8
fi
