"""`tfdash diff A.json B.json`: two profile snapshots compared, as text, JSON or Markdown.

    tfdash diff A.json B.json [--group launch|op|family|layer] [--force] [--top N]
                              [--json [OUT]] [--markdown [OUT]]

Text (the default) and Markdown print a header (step time, tok/s and share of the ceiling in A
and B, with Δ; a share past the ceiling marked `!`, and a line under the header saying the probe
read low) and one row per launch, op, family or layer, sorted by |Δ|: measured time in A and
B, Δ and Δ %, predicted time and bytes in A and B, gap × in A and B. `--json` or `--markdown`
without a file prints that form instead of the text; with OUT it writes the file (making missing
folders, as exports do, and saying so) and prints the text. The comparison itself is
`tfdash.profiling.diff`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from tfdash.argparsing import Parser, named
from tfdash.errors import UsageError
from tfdash.options import snapshot_path
from tfdash.profiling.diff import GROUPS, DiffRow, SnapshotDiff, Step, compare, step_deltas, to_json
from tfdash.profiling.probe import ceiling_note, over_ceiling
from tfdash.termenc import escaped
from tfdash.textsafe import visible
from tfdash.units import fmt_bytes, fmt_gap

MARK = {"matched": " ", "added": "+", "removed": "-"}
OVER = "!"  # after a share of the ceiling past it (probe.over_ceiling); a line under the header says why
COLUMNS = ("meas A µs", "meas B µs", "Δ µs", "Δ %", "pred A µs", "pred B µs", "bytes A", "bytes B",
           "gap A", "gap B")


def _us(ns: float | None, signed: bool = False) -> str:
    if ns is None:
        return "—"
    return f"{ns / 1e3:+,.2f}" if signed else f"{ns / 1e3:,.2f}"


def _pct(v: float | None, signed: bool = True) -> str:
    return "—" if v is None else (f"{v:+.1f} %" if signed else f"{v:.1f} %")


def _num(v: float | None, digits: int = 1, signed: bool = False) -> str:
    return "—" if v is None else (f"{v:+,.{digits}f}" if signed else f"{v:,.{digits}f}")


def row_cells(r: DiffRow) -> list[str]:
    """The row's cells after its label, in COLUMNS order."""
    a, b = r.a, r.b
    return [_us(a.measured_ns if a else None), _us(b.measured_ns if b else None), _us(r.delta_ns, True),
            _pct(r.delta_pct), _us(a.predicted_ns if a else None), _us(b.predicted_ns if b else None),
            fmt_bytes(a.bytes if a else None), fmt_bytes(b.bytes if b else None), fmt_gap(a.gap if a else None),
            fmt_gap(b.gap if b else None)]


def _same(text: str) -> str:
    return text


def row_label(r: DiffRow, data=_same) -> str:
    """The row's name, with what changed in its make-up: added, removed, a different launch
    count, or another kernel. `data` spells what the file said (the role, the kernels' names) for
    the stream it goes to: termenc.escaped on stdout, so a role's Δ is not taken for tfdash's."""
    what = {"added": " (added)", "removed": " (removed)"}.get(r.status, "")
    a, b = r.a, r.b
    if a and b and a.count != b.count:
        what = f" ({a.count} → {b.count} launches)"
    elif r.kernel_changed:
        one = len(a.kernels) == len(b.kernels) == 1
        what = f" ({data(a.kernels[0])} → {data(b.kernels[0])})" if one else " (other kernels)"
    return data(r.label) + what


def _share(s: Step) -> str:
    """A side's share of its ceiling, marked OVER where it is past it."""
    return _pct(s.pct_ceiling, False) + (OVER if over_ceiling(s.pct_ceiling) else "")


def ceiling_notes(d: SnapshotDiff) -> list[str]:
    """Why a side's step is over its ceiling (probe.over_ceiling_note), each note once: both sides'
    usually name the same cache file. A side priced on a figure this host's cache does not hold (from
    another machine) names no file of this one."""
    notes = (ceiling_note(s.pct_ceiling, s.ceiling_source, s.ceiling_gbps)
             for s in (d.a, d.b))
    return list(dict.fromkeys(n for n in notes if n))


def _hung(cell: str, width: int) -> str:
    """`cell` right-aligned in `width` and one column more: an OVER mark hangs in it, so the figures
    and their units stay in line whether marked or not."""
    return cell[:-1].rjust(width) + OVER if cell.endswith(OVER) else cell.rjust(width) + " "


def _gbps(v: float | None) -> str:
    """A side's ceiling: every predicted time is its bytes over it, so two runs priced on other
    ceilings predict the same bytes at other times."""
    return "—" if not v else f"{v:,.0f} GB/s"


def _delta_us(a: float | None, b: float | None) -> str:
    return "—" if a is None or b is None else f"{_us(b - a, True)} µs"


def header_rows(d: SnapshotDiff) -> list[tuple[str, str, str, str]]:
    """(what, A, B, Δ) for the step-level numbers."""
    s = step_deltas(d)
    a, b = d.a, d.b
    delta_step = f"{_us(s['delta_ns'], True)} µs ({_pct(s['delta_pct'])})" if s["delta_ns"] is not None else "—"
    delta_tok = f"{_num(s['tok_s_delta'], 1, True)} ({_pct(s['tok_s_delta_pct'])})" \
        if s["tok_s_delta"] is not None else "—"
    pc = s["pct_ceiling_delta"]
    return [
        ("step (profile window)", f"{_us(a.step_ns)} µs", f"{_us(b.step_ns)} µs", delta_step),
        ("step p50 (run)", f"{_us(a.step_p50_ns)} µs", f"{_us(b.step_p50_ns)} µs",
         _delta_us(a.step_p50_ns, b.step_p50_ns)),
        ("tok/s (run)", _num(a.tok_s), _num(b.tok_s), delta_tok),
        ("share of the ceiling", _share(a), _share(b),
         "—" if pc is None else f"{pc:+.1f} points"),
        ("ceiling (prices predicted)", _gbps(a.ceiling_gbps), _gbps(b.ceiling_gbps),
         "—" if not (a.ceiling_gbps and b.ceiling_gbps) else _pct(100.0 * (b.ceiling_gbps / a.ceiling_gbps - 1))),
        ("predicted step", f"{_us(a.predicted_step_ns)} µs", f"{_us(b.predicted_step_ns)} µs",
         _delta_us(a.predicted_step_ns, b.predicted_step_ns)),
        ("kernel sum", f"{_us(a.kernel_sum_ns)} µs", f"{_us(b.kernel_sum_ns)} µs",
         _delta_us(a.kernel_sum_ns, b.kernel_sum_ns)),
        ("launches/step", str(a.launches), str(b.launches), f"{b.launches - a.launches:+d}"),
    ]


def names(labels: tuple[str, ...], most: int = 6) -> str:
    """The labels, or past `most` of them, each op once with its count ("L*.qk_norm_rope ×28")."""
    if len(labels) <= most:
        return ", ".join(labels)
    counts: dict[str, int] = {}
    for label in labels:
        head, dot, rest = label.partition(".")
        op = "L*." + rest if dot and head[:1] == "L" and head[1:].isdigit() else label
        counts[op] = counts.get(op, 0) + 1
    return ", ".join(op if n == 1 else f"{op} ×{n}" for op, n in counts.items())


def summary_lines(d: SnapshotDiff, data=_same) -> list[str]:
    """Which runs, how they were aligned, what matched and what did not; `data` spells what came
    from the files (paths, models, devices, roles) as row_label's does."""
    out = [f"{side}: " + data(f"{s.source} ({s.model}, {s.dtype}, {s.backend} on {s.device})")
           for side, s in (("A", d.a), ("B", d.b))]
    if d.note:
        out.append(d.note)
    unit = d.group if d.matched == 1 else {"launch": "launches", "family": "families"}.get(d.group, f"{d.group}s")
    line = f"aligned by {d.aligned_by}, one row per {d.group}: {d.matched} {unit} matched"
    line += f", {len(d.added)} added (B only)" + (f": {names(tuple(map(data, d.added)))}" if d.added else "")
    line += f", {len(d.removed)} removed (A only)" + (f": {names(tuple(map(data, d.removed)))}" if d.removed else "")
    out.append(line)
    if d.a.ctx_len is not None and d.b.ctx_len is not None and d.a.ctx_len != d.b.ctx_len:
        out.append(f"profiled at ctx_len {d.a.ctx_len} in A and {d.b.ctx_len} in B: attention's time depends on it")
    for side, s in (("A", d.a), ("B", d.b)):
        if s.kernel_sum_ns is None:
            out.append(f"{side} has launches without a measurement (no profile window?): their Δ is —")
    return out


def _more(n: int) -> str:
    """"1 more row", "3 more rows": what --top left out."""
    return f"{n} more row{'' if n == 1 else 's'}"


def render_text(d: SnapshotDiff, top: int | None = None, data=_same) -> str:
    """The diff as text; `data` spells the files' own text for the stream (summary_lines)."""
    lines = [f"# {x}" for x in summary_lines(d, data)]
    head = header_rows(d)
    w = max(len(h[0]) for h in head)
    cols = [max(1, *(len(h[i].removesuffix(OVER)) for h in head)) for i in (1, 2)]  # a mark hangs past them
    lines.append(f"# {'':<{w}}  {'A':>{cols[0]}}  {'B':>{cols[1]}}  Δ (B − A)")
    for what, a, b, delta in head:
        lines.append(f"# {what:<{w}}  {_hung(a, cols[0])} {_hung(b, cols[1])} {delta}")
    lines += [f"# {OVER} {note}" for note in ceiling_notes(d)]
    rows = list(d.rows[:top] if top else d.rows)
    labels = [f"{MARK[r.status]} {row_label(r, data)}" for r in rows]
    cells = [row_cells(r) for r in rows]
    lw = max([len(d.group) + 2, *(len(x) for x in labels)])
    widths = [max(len(c), *(len(row[i]) for row in cells)) if cells else len(c) for i, c in enumerate(COLUMNS)]
    lines.append(f"{d.group:<{lw}}  " + "  ".join(c.rjust(n) for c, n in zip(COLUMNS, widths)))
    for label, row in zip(labels, cells):
        lines.append(f"{label:<{lw}}  " + "  ".join(c.rjust(n) for c, n in zip(row, widths)))
    if top and len(d.rows) > top:
        lines.append(f"({_more(len(d.rows) - top)}; --top 0 shows all)")
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def render_markdown(d: SnapshotDiff, top: int | None = None) -> str:
    out = [f"**tfdash diff** · {' · '.join(_md(x) for x in summary_lines(d))}", "",
           "| | A | B | Δ (B − A) |", "| --- | ---: | ---: | ---: |"]
    out += [f"| {_md(w)} | {_md(a)} | {_md(b)} | {_md(x)} |" for w, a, b, x in header_rows(d)]
    out += [line for note in ceiling_notes(d) for line in ("", f"{OVER} {_md(note)}")]
    out += ["", f"| {d.group} | " + " | ".join(COLUMNS) + " |", "| --- |" + " ---: |" * len(COLUMNS)]
    rows = d.rows[:top] if top else d.rows
    for r in rows:
        label = row_label(r)
        label = f"**{_md(label)}**" if r.status != "matched" else _md(label)
        out.append(f"| {label} | " + " | ".join(_md(c) for c in row_cells(r)) + " |")
    if top and len(d.rows) > top:
        out.append(f"\n{_more(len(d.rows) - top)} not shown.")
    return "\n".join(out) + "\n"


class _DiffParser(Parser):
    """`tfdash diff --json A.json B.json`: --json takes the word after it as its OUT file, so B.json was
    "required" of a command given two snapshots. The missing B says which flag took one."""

    took = ""

    def error(self, message: str):
        if "B.json" in message and self.took:
            flag = self.took.split()[0]
            message += f" ({self.took} as its OUT file: put it after the two snapshots, or write {flag}=OUT)"
        super().error(message)

    def parse_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        self.took = next((f"{flag} took {nxt}" for flag, nxt in zip(args, args[1:])
                          if flag in ("--json", "--markdown") and nxt != "-" and not nxt.startswith("-")), "")
        return super().parse_args(args, namespace)


def parser() -> argparse.ArgumentParser:
    p = _DiffParser(prog="tfdash diff",
               description="Compare two profile snapshots launch by "
                           "launch: measured, predicted and gap in A and B, Δ = B − A, sorted by |Δ|.")
    p.add_argument("a", metavar="A.json", type=snapshot_path, help="the baseline snapshot")
    p.add_argument("b", metavar="B.json", type=snapshot_path, help="the snapshot compared against it")
    p.add_argument("--group", choices=GROUPS, default=None, help="one row per launch (default; per op with "
                   "--force), op, family or layer")
    p.add_argument("--force", action="store_true", help="compare snapshots whose model shape or dtype differ (by op "
                   "unless --group says otherwise)")
    p.add_argument("--top", type=int, default=0, metavar="N", help="only the N rows that moved most (0: all)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", nargs="?", const="-", metavar="OUT", type=named,
                     help="the diff as JSON (schema tfdash.diff/1): to stdout, or written to OUT")
    out.add_argument("--markdown", nargs="?", const="-", metavar="OUT", type=named,
                     help="the diff as a Markdown table: to stdout, or written to OUT")
    return p


def write_out(out: str, text: str) -> str:
    """Write `text` to the file OUT, making missing folders as --export and --export-dir do; the line
    it returns names the file and any folder made for it, so a typo in a folder name is seen."""
    from tfdash.profiling.export_files import gz_name
    from tfdash.profiling.files import missing_folders_of_file, replaces_file, write_text_atomic, wrote_line

    new, replaced = missing_folders_of_file(out), replaces_file(out)
    return wrote_line(write_text_atomic(out, text, gz=gz_name(out)), new, replaced)


def main(argv: list[str]) -> int:
    from tfdash.profiling.export import load_snapshot, snapshot_labels
    from tfdash.profiling.files import check_not_a_snapshot, check_not_an_input, check_writable_file, table_stream

    p = parser()
    args = p.parse_args(argv)
    if args.top < 0:  # said as the parser says its own errors: the command and its help
        raise UsageError(f"--top {args.top}: expected 0 (all rows) or more", p.prog)
    for flag, out in (("--json", args.json), ("--markdown", args.markdown)):
        if out not in (None, "-"):  # said as bench and analyze say it, before the snapshots are read
            check_writable_file(out, flag)
            check_not_an_input(out, flag, {"snapshot A": args.a, "snapshot B": args.b})
            check_not_a_snapshot(out, flag)
    a, b = load_snapshot(args.a), load_snapshot(args.b)
    a_source, b_source = snapshot_labels(args.a, args.b)  # two snapshot-h200.json: each with its folder
    d = compare(a, b, group=args.group, force=args.force, a_source=a_source, b_source=b_source)
    top = args.top or None
    if args.json is not None:
        data = to_json(d)
        if top and len(d.rows) > top:  # --top holds for every form, as the text and Markdown say it
            data["rows"], data["rows_left_out"] = data["rows"][:top], len(d.rows) - top
        payload = json.dumps(data, indent=1, allow_nan=False) + "\n"
        if args.json == "-":
            sys.stdout.write(payload)
            return 0
        print(write_out(args.json, payload), file=sys.stderr)
    if args.markdown is not None:  # roles and file names are untrusted text: no escape of theirs reaches a terminal
        md = visible(render_markdown(d, top), keep="\n")
        if args.markdown == "-":  # a document, not terminal text: UTF-8 bytes, as --markdown /dev/stdout writes
            write_utf8(sys.stdout, md)
            return 0
        print(write_out(args.markdown, md), file=sys.stderr)
    # --json or --markdown /dev/stdout: stdout is that file alone, for a pipe, and the table goes to stderr
    out = sys.stderr if sys.stderr in (table_stream(args.json), table_stream(args.markdown)) else sys.stdout
    out.write(visible(render_text(d, top, lambda text: escaped(text, out)), keep="\n"))
    if same_run(args.a, args.b):  # every Δ reads 0, which says nothing of the change one meant to measure
        print(visible(f"tfdash diff: {args.a} and {args.b} hold the same run, byte for byte: every Δ is 0 "
                      "(two runs were meant?)"), file=sys.stderr)
    return 0


def write_utf8(stream, text: str) -> None:
    """`text` to `stream` as UTF-8 bytes whatever the stream's encoding (a file's content, which its
    reader takes as UTF-8); a stream without bytes beneath it gets the text."""
    raw = getattr(stream, "buffer", None)
    if raw is None:
        stream.write(text)
        return
    stream.flush()
    raw.write(text.encode("utf-8"))
    raw.flush()


def same_run(a, b) -> bool:
    """Whether the two snapshot files are one file, or copies of one file."""
    try:
        if os.path.samefile(a, b):
            return True
        return os.path.getsize(a) == os.path.getsize(b) and Path(a).read_bytes() == Path(b).read_bytes()
    except OSError:
        return False
