"""What the dashboard shows of Nsight Compute's counters, and the engine a drill-down asks the
counters child to build: plain functions, no widgets.

    engine_args(snap)             the snapshot's engine (checkpoint or preset, device, dtype,
                                  backend) as `tfdash counters` takes it
    meas_bytes(members)           the kernel table's "meas bytes" cell
    counters_content(...)         the drill-down's counters tab
"""

from __future__ import annotations

from typing import Sequence

from textual.content import Content

from tfdash.profiling.snapshot import Counters, KernelRow, ProfileSnapshot
from tfdash.units import fmt_bytes


def engine_args(snap: ProfileSnapshot) -> dict:
    """The snapshot's engine, as the counters child builds it (random weights: the preset of the
    recorded model's name; the weights' values do not change what a kernel moves)."""
    m = snap.meta
    ckpt = None if m.checkpoint == "random" else m.checkpoint
    return {"ckpt": ckpt, "model": None if ckpt else m.model.get("name"), "device": m.device, "dtype": m.dtype,
            "backend": m.backend}


def meas_bytes(members: Sequence[KernelRow]) -> tuple[int | None, int]:
    """(measured DRAM bytes summed over the members that have counters, how many have them)."""
    got = [k.counters.dram_bytes for k in members if k.counters is not None and k.counters.dram_bytes is not None]
    return (sum(got) if got else None), len(got)


def meas_cell(total: int | None, measured: int, count: int) -> str:
    """"50.4 MB" when every member was measured; "1.8 GB (1/28)" when only some were."""
    if total is None:
        return "—"
    return fmt_bytes(total) if measured == count else f"{fmt_bytes(total)} ({measured}/{count})"


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:.1f} %"


def _ratio(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f}×"


def _dims(d: tuple[int, ...]) -> str:
    return " × ".join(map(str, d)) if d else "—"


def detail(c: Counters) -> list[tuple[str, str]]:
    """(label, value) lines of one launch's counters."""
    smem = fmt_bytes(c.smem_static) + (f" static + {fmt_bytes(c.smem_dynamic)} dynamic" if c.smem_dynamic else " static")
    return [
        ("DRAM read", f"{fmt_bytes(c.dram_read)}   analyzer {fmt_bytes(c.predicted_read)}   "
                      f"ratio {_ratio(c.read_ratio)}"),
        ("DRAM written", f"{fmt_bytes(c.dram_written)}   analyzer {fmt_bytes(c.predicted_written)}"),
        ("read + written", f"{fmt_bytes(c.dram_bytes)}   ratio {_ratio(c.ratio)}"),
        ("warps active", f"{_pct(c.warps_active_pct)} of peak (achieved occupancy)"),
        ("registers", "—" if c.registers is None else f"{c.registers} a thread"),
        ("shared memory", f"{smem} a block"),
        ("grid · block", f"{_dims(c.grid)} blocks · {_dims(c.block)} threads"),
        ("under ncu", "—" if c.ncu_ns is None else f"{c.ncu_ns / 1e3:,.2f} µs, serialized under ncu (each kernel "
                      "alone, no PDL overlap): not the in-graph time"),
    ]


def beside_engine(live: bool, state: str) -> str:
    """What the counters' child process runs beside, in the words of the run's `state` (the app's):
    a decoding engine, a paused one, a run that is over, or (a saved snapshot) no engine at all."""
    if not live:
        return "one that builds this snapshot's model"
    if state == "paused":
        return "the dashboard's engine stays paused"
    if state in ("done", "stopped", "error"):
        return "one that builds this run's model; the dashboard's run is over"
    return "the dashboard's engine keeps decoding"


def counters_content(role: str, current: KernelRow | None, members: Sequence[KernelRow], status: str | None,
                     live: bool, key: str, state: str = "running") -> Content:
    """The counters tab: the current launch's counters in full, then one line per measured member.
    `key` (n unless remapped) measures in a child process: beside a live run's engine (decoding,
    paused or over, as `state` says), or (a saved snapshot) one that builds the snapshot's model."""
    # said at once (no GPU): no key to press, nothing to wait for
    cannot = bool(status) and status.startswith("unavailable")
    beside = beside_engine(live, state)
    parts: list = [("Nsight Compute's counters of ", "$text-muted"), (role, "bold $text-primary"),
                   (f", inside one replay of the step's graph in a child process ({beside}).", "$text-muted")]
    parts += [("\n\n", "")] if cannot else [(" Press ", "$text-muted"), (key, "bold $accent"),
                                              (" to measure it.\n\n", "$text-muted")]
    if status:
        parts += [(status, "bold $text-warning" if status.startswith("unavailable") else "italic $text-accent"),
                  ("\n\n", "")]
    c = current.counters if current is not None else None
    if c is None:
        if not cannot:
            parts.append(("not measured yet" + ("" if live else " (a saved snapshot: `tfdash counters --snapshot "
                                                                "FILE` adds them)"), "italic $text-muted"))
    else:
        parts += [(f"{'at ctx_len':>15}  ", "$text-muted"), (f"{c.ctx_len:,}", "bold"), (f"   {c.kernel}\n", "$text-muted")]
        for label, value in detail(c):
            parts += [(f"{label:>15}  ", "$text-muted"), (value, "bold"), ("\n", "")]
    others = [k for k in members if k.counters is not None and (current is None or k.index != current.index)]
    if others:
        parts.append(("\nmeasured instances\n", "$text-muted"))
        for k in others:
            o = k.counters
            parts += [(f"{k.role:>15}  ", "$text-muted"),
                      (f"{fmt_bytes(o.dram_bytes)}  ratio {_ratio(o.ratio)}  warps {_pct(o.warps_active_pct)}  "
                       f"regs {o.registers if o.registers is not None else '—'}\n", "")]
    return Content.assemble(*parts)
