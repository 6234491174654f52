"""The CUPTI ring (tfdash/profiling/cupti_ring.c) run for real on a CPU, against a stub CUPTI.

tests/fixtures/cupti_stub holds a minimal cupti.h (CUPTI's names and signatures, only what the
ring uses) and libcupti_stub.c, built here as libcupti.so: it stores the registered buffer
callbacks, and stub_emit fills buffers with kernel records and completes them as CUPTI's thread
would. The ring is compiled by cupti_build.build, as on a GPU host, and each test loads its own
copy of the .so so its C state starts empty. Also: available() and the locate steps give one
line and never raise when the compiler, libcupti or cupti.h is missing.
"""

import time
import ctypes
import shutil
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest

from tfdash.profiling import cupti_build, cupti_ring
from tfdash.profiling.cupti_build import Found
from tfdash.profiling.cupti_ring import CuptiRing

STUB = Path(__file__).parent / "fixtures" / "cupti_stub"
CC = cupti_build.compiler()
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler (cc, gcc or clang) on this machine")
KERNEL, MEMCPY, CORRUPT = 10, 1, 0  # CUpti_ActivityKind values the stub emits


def _cc(*args):
    p = subprocess.run([*CC.split(), *map(str, args)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(Found, ring .so) for the stub: libcupti.so compiled from the stub, the ring built against it."""
    d = tmp_path_factory.mktemp("cupti_stub")
    (d / "lib").mkdir()
    _cc("-O2", "-shared", "-fPIC", f"-I{STUB}", STUB / "libcupti_stub.c", "-o", d / "lib" / "libcupti.so")
    found = Found(lib=d / "lib" / "libcupti.so", include=STUB, header_version=130001)
    so = cupti_build.build(found, cache=d / "cache")
    assert isinstance(so, Path), so
    return found, so


@pytest.fixture
def stub(built):
    s = ctypes.CDLL(str(built[0].lib), mode=ctypes.RTLD_GLOBAL)
    s.stub_emit.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, ctypes.c_int,
                            ctypes.c_uint32, ctypes.c_uint32, ctypes.c_int]
    s.stub_fail.argtypes = [ctypes.c_char_p, ctypes.c_int]
    s.stub_reset()
    return s


@pytest.fixture
def lib(built, stub, tmp_path):
    copy = tmp_path / "ring.so"  # a path of its own: a fresh dlopen, fresh C state
    shutil.copy(built[1], copy)
    lib = cupti_build.load(built[0], copy)
    assert not isinstance(lib, str), lib
    yield lib
    lib.tfr_stop()
    cupti_ring._owner[0] = None


def emit(stub, n, names=(b"gemv",), kind=KERNEL, graph=2, corr=1, hold=False):
    arr = (ctypes.c_char_p * len(names))(*names)  # kept alive for the call: the stub stores the pointers
    return stub.stub_emit(n, arr, len(names), kind, graph, corr, int(hold))


def started(lib, **kw):
    ring = CuptiRing(lib=lib, **kw)
    assert ring.start(), ring.error
    return ring


def test_compiles_warning_free_against_the_stub(built, tmp_path):
    _cc("-O2", "-shared", "-fPIC", "-std=gnu11", "-Wall", "-Wextra", "-Werror", f"-I{STUB}",
        cupti_build.SOURCE, "-o", tmp_path / "w.so", f"-L{built[0].lib.parent}", "-lcupti")


def test_records_come_out_as_columns_with_interned_names(lib, stub):
    ring = started(lib)
    assert stub.stub_kernel_enabled() == 1 and stub.stub_period() == 100
    names = (b"rmsnorm", b"gemv_qkv", b"attention")
    assert emit(stub, 143, names, graph=2, corr=7) == 1
    start, end, node, name_id = ring.drain()
    assert len(start) == 143 and start.dtype == np.uint64 and name_id.dtype == np.uint32
    assert (end - start == 500).all() and (np.diff(start.astype(np.int64)) == 1000).all()
    assert (node == (2 << 32) + np.arange(143)).all()
    assert ring.names() == ["rmsnorm", "gemv_qkv", "attention"]  # first-seen order
    assert (name_id == np.arange(143) % 3).all()
    assert list(ring.names_for(name_id[:4])) == ["rmsnorm", "gemv_qkv", "attention", "rmsnorm"]
    s = ring.stats()
    assert (s["records"], s["buffers"], s["launches"], s["drained"], s["ring_used"]) == (143, 1, 1, 143, 0)
    assert s["names"] == 3 and s["running"] == 1 and s["callback_ns"] > 0 and s["cupti_error"] == ""
    assert ring.drain()[0].size == 0


def test_names_are_interned_by_content_not_pointer(lib, stub):
    ring = started(lib)
    a, b = ctypes.create_string_buffer(b"kernel_a"), ctypes.create_string_buffer(b"kernel_a")
    emit(stub, 2, (ctypes.cast(a, ctypes.c_char_p), ctypes.cast(b, ctypes.c_char_p)))
    a.value = b"kernel_b"  # the same pointer now names another kernel
    emit(stub, 1, (ctypes.cast(a, ctypes.c_char_p),))
    assert list(ring.drain()[3]) == [0, 0, 1]
    assert ring.names() == ["kernel_a", "kernel_b"]


def test_full_ring_drops_new_records_and_counts_them(lib, stub):
    ring = started(lib, ring_records=1000)  # rounded up to 1024 entries
    t0 = ring.timestamp()  # the stub's clock: its first record starts there
    emit(stub, 1500, corr=1)
    s = ring.stats()
    assert (s["ring_capacity"], s["ring_used"], s["ring_dropped"], s["records"]) == (1024, 1024, 476, 1500)
    start = ring.drain()[0]
    assert len(start) == 1024 and start[0] == t0  # the oldest are kept
    emit(stub, 10, corr=2)
    assert len(ring.drain()[0]) == 10 and ring.stats()["launches"] == 2


def test_buffers_split_records_and_hold_until_flushed(lib, stub):
    ring = started(lib, buffer_bytes=65536)
    buffers = emit(stub, 5000)  # ~1200 stub records fit a 64 KiB buffer
    assert buffers > 1 and ring.stats()["buffers"] == buffers
    assert len(ring.drain()[0]) == 5000
    emit(stub, 20, hold=True)
    assert ring.stats()["ring_used"] == 0 and stub.stub_holding()
    assert ring.flush(forced=True) and stub.stub_last_flush_flag() == 1
    assert len(ring.drain(max_records=15)[0]) == 15 and len(ring.drain()[0]) == 5


def test_counters_for_cupti_drops_other_kinds_and_corrupt_records(lib, stub):
    ring = started(lib)
    stub.stub_set_dropped(7)
    emit(stub, 3)
    emit(stub, 4, kind=MEMCPY)
    emit(stub, 2, kind=CORRUPT)
    s = ring.stats()
    assert (s["records"], s["cupti_dropped"], s["other_records"], s["bad_records"]) == (3, 7, 4, 1)
    assert "CUPTI_ERROR_INVALID_KIND" in s["cupti_error"]


def test_graph_ids_and_a_full_name_table(lib, stub):
    ring = started(lib)
    names = [f"k{i}".encode() for i in range(4100)]
    emit(stub, 4100, names, graph=5)
    start, end, node, name_id, graph = ring.drain(graph=True)
    assert (graph == 5).all() and ring.stats()["name_overflow"] == 4
    assert (name_id[-4:] == cupti_ring.NAME_OVERFLOW).all()
    assert list(ring.names_for(name_id[[0, -1]])) == ["k0", "(name table full)"]
    assert len(ring.names()) == 4096


def test_stop_flushes_disables_and_a_restart_registers_again(lib, stub):
    ring = started(lib)
    regs = stub.stub_registrations()
    emit(stub, 30, hold=True)
    assert ring.stop() and stub.stub_kernel_enabled() == 0 and not stub.stub_holding()
    assert stub.stub_period() == 0  # the flush period it set is reset
    assert emit(stub, 5) == 0  # kind disabled: CUPTI records nothing
    stub.cuptiActivityEnable(KERNEL)  # someone else enables the kind; buffers reach our callbacks
    emit(stub, 5)
    stub.cuptiActivityDisable(KERNEL)
    s = ring.stats()
    assert (s["late_buffers"], s["records"], s["running"]) == (1, 30, 0)
    assert len(ring.drain()[0]) == 30  # entries left in the ring stay drainable after stop
    assert ring.stop()  # a second stop is harmless
    assert ring.start() and stub.stub_registrations() == regs + 1
    emit(stub, 4)
    assert len(ring.drain()[0]) == 4


@pytest.mark.parametrize("fn, code, says", [
    ("cuptiActivityRegisterCallbacks", 39, "cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed): "
                                           "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (39)"),
    ("cuptiActivityEnable", 999, "cuptiActivityEnable(CONCURRENT_KERNEL): CUPTI_ERROR_UNKNOWN (999)"),
])
def test_a_cupti_refusal_is_one_line_and_start_can_be_retried(lib, stub, fn, code, says):
    stub.stub_fail(fn.encode(), code)
    ring = CuptiRing(lib=lib)
    assert not ring.start() and not ring.running
    assert ring.error == f"CUPTI refused kernel activity records: {says}"
    assert stub.stub_kernel_enabled() == 0 and cupti_ring._owner[0] is None
    stub.stub_fail(None, 0)
    assert ring.start()


def test_a_cupti_of_another_major_is_refused(lib, stub):
    stub.stub_set_version(120000)
    ring = CuptiRing(lib=lib)
    assert not ring.start() and "does not match cupti.h's 130001" in ring.error


def test_one_ring_at_a_time_and_idle_calls_are_harmless(lib, stub):
    idle = CuptiRing()
    assert idle.stop() and idle.flush() and idle.names() == [] and idle.drain()[0].size == 0
    first = started(lib)
    second = CuptiRing(lib=lib)
    assert not second.start() and "another CuptiRing" in second.error
    assert first.timestamp() > 0
    first.stop()
    assert second.start()
    second.stop()


def test_drain_races_a_producer_thread_without_losing_count(lib, stub):
    ring = started(lib, ring_records=4096)
    total, chunk = 200_000, 2_000
    done = threading.Event()

    def produce():
        for _ in range(total // chunk):
            emit(stub, chunk)
        done.set()

    t = threading.Thread(target=produce)
    t.start()
    got, last = 0, 0
    while not done.is_set() or ring.stats()["ring_used"]:
        start = ring.drain()[0]
        if len(start):
            assert start[0] > last and (np.diff(start.astype(np.int64)) > 0).all()  # in order, none twice
            last, got = int(start[-1]), got + len(start)
    t.join()
    s = ring.stats()
    assert got + s["ring_dropped"] == total == s["records"] and got == s["drained"]


# -- finding CUPTI ------------------------------------------------------------------------------
@pytest.fixture
def roots(monkeypatch, tmp_path):
    """An empty CUDA root searched instead of the machine's, with no libcupti already mapped."""
    monkeypatch.setattr(cupti_build, "loaded_libcupti", lambda: None)
    monkeypatch.setattr(cupti_build, "candidate_roots", lambda: [tmp_path])
    return tmp_path


def _one_line(ok_reason):
    ok, reason = ok_reason
    assert not ok and reason and "\n" not in reason
    return reason


def test_no_libcupti_says_how_to_get_it(roots):
    assert _one_line(cupti_ring.available(cache=roots / "c")).startswith("libcupti.so not found: pip install")


def test_no_header_says_which_headers(roots, built):
    (roots / "lib64").mkdir()
    shutil.copy(built[0].lib, roots / "lib64" / "libcupti.so.13")
    reason = _one_line(cupti_ring.available(cache=roots / "c"))
    assert reason.startswith("cupti.h not found") and "extras/CUPTI/include" in reason


def test_a_header_of_another_major_is_not_used(roots, built):
    (roots / "lib").mkdir()
    shutil.copy(built[0].lib, roots / "lib" / "libcupti.so")
    (roots / "include").mkdir()
    (roots / "include" / "cupti.h").write_text("#define CUPTI_API_VERSION 24\n")
    assert "no cupti.h for libcupti API 130001" in _one_line(cupti_ring.available(cache=roots / "c"))


def test_no_compiler(roots, monkeypatch):
    monkeypatch.setattr(cupti_build, "compiler", lambda: None)
    assert _one_line(cupti_ring.available()).startswith("no C compiler")
    assert cupti_build.build(Found(lib=roots, include=roots)).startswith("no C compiler")


def test_a_failed_build_is_one_line(roots, built):
    (roots / "cupti.h").write_text("#error not a cupti header\n")
    reason = cupti_build.build(Found(lib=built[0].lib, include=roots), cache=roots / "c")
    assert "failed building cupti_ring.c" in reason and "\n" not in reason


def test_all_found_then_cuda_and_the_profiler_decide(roots, built, monkeypatch):
    (roots / "lib").mkdir()
    shutil.copy(built[0].lib, roots / "lib" / "libcupti.so")
    shutil.copytree(STUB, roots / "include")
    found = cupti_build.locate()
    assert found.include == roots / "include" and found.kernel_record == "CUpti_ActivityKernel10"
    assert found.lib_version == 130001 and found.extra_includes == ()  # the stub includes no cuda.h
    monkeypatch.setattr(cupti_ring, "cuda_missing", lambda: "CUDA is not available (test)")
    assert cupti_ring.available(cache=roots / "c") == (False, "CUDA is not available (test)")
    monkeypatch.setattr(cupti_ring, "cuda_missing", lambda: None)
    monkeypatch.setattr(cupti_ring, "torch_profiler_running", lambda: True)
    assert _one_line(cupti_ring.available(cache=roots / "c")).startswith("torch.profiler is running")
    monkeypatch.setattr(cupti_ring, "torch_profiler_running", lambda: False)
    ok, reason = cupti_ring.available(cache=roots / "c")
    assert ok and reason.startswith("CUPTI ring ready")


def test_kernel_record_is_read_from_the_header(tmp_path):
    (tmp_path / "cupti_activity.h").write_text(
        "/** The corresponding activity record structure is \\ref CUpti_ActivityKernel11. */\n"
        "  CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL = 10,\n} CUpti_ActivityKernel9;\n")
    assert cupti_build.kernel_record(tmp_path) == "CUpti_ActivityKernel11"
    real = Path("/usr/local/cuda/include")
    if (real / "cupti_activity.h").is_file() and cupti_build.header_version(real) >= 130000:
        assert cupti_build.kernel_record(real) == "CUpti_ActivityKernel10"


def test_ring_source_delivers_batches_off_the_caller_and_pauses_for_a_profiler(lib, stub):
    """Continuous timing's default source: the ring's columns arrive as Records on the drain
    thread; a pause (a profile window) stops CUPTI's records, a resume starts them again."""
    import threading

    from tfdash.profiling.continuous.ring_source import RingSource

    got, threads = [], set()

    def deliver(rec):
        got.append(rec)
        threads.add(threading.current_thread().name)

    src = RingSource(None, ring=CuptiRing(lib=lib))
    assert src.check() is None
    src.start(deliver)
    try:
        assert emit(stub, 143, (b"embed_gather_kernel", b"gemv_qkv_kernel"), graph=3) == 1
        src.flush()
        assert sum(len(r) for r in got) == 143
        rec = got[0]
        assert list(rec.names[:3]) == ["embed_gather_kernel", "gemv_qkv_kernel", "embed_gather_kernel"]
        assert rec.start.dtype == np.int64 and (rec.end - rec.start == 500).all() and (rec.graph == 3).all()
        src.pause()
        assert stub.stub_kernel_enabled() == 0 and not src.ring.running
        src.resume()
        assert stub.stub_kernel_enabled() == 1
        emit(stub, 10, (b"argmax_feed_kernel",))
        src.flush()
        assert sum(len(r) for r in got) == 153 and got[-1].names[-1] == "argmax_feed_kernel"
    finally:
        src.stop()
    assert not src.ring.running and src.error is None
    assert threads <= {"tfdash-cupti-ring", threading.main_thread().name}


def test_ring_source_says_why_on_a_cpu_engine():
    from types import SimpleNamespace

    from tfdash.profiling.continuous.ring_source import RingSource

    why = RingSource(SimpleNamespace(cuda=False)).check()
    assert why and "\n" not in why and "CPU" in why


def test_ring_source_converts_a_tsc_clock_to_ns():
    """After torch.profiler, CUPTI's timestamps can be the CPU's TSC (kineto registers it): the
    unit measured at start turns the records back into ns."""
    from types import SimpleNamespace

    from tfdash.profiling.continuous.ring_source import RingSource

    t0 = time.perf_counter_ns()
    ring = SimpleNamespace(lib=object(), running=True, start=lambda: True,
                           timestamp=lambda: int((time.perf_counter_ns() - t0) * 2.1) + 10**12)
    src = RingSource(SimpleNamespace(cuda=True, capture=None), ring=ring)
    src._calibrate()
    assert abs(src.ticks_per_ns - 2.1) < 0.02
    ts = np.array([10**12 + 2_100_000, 10**12 + 4_200_000], dtype=np.uint64)
    ns = src.to_ns(ts)
    assert abs(int(ns[1] - ns[0]) - 1_000_000) < 20_000  # 2.1 M ticks apart: 1 ms
    assert abs(int(ns[0]) - (t0 + 1_000_000)) < 50_000  # in perf_counter's own ns
