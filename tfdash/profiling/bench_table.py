"""`tfdash bench`'s report: the table (a line saying what ran, a row per backend, the engine against
its strongest peer) and the --json file beside it.

No backend streams faster than a cold copy: a share of the copy ceiling past it (probe.over_ceiling)
means the probe read low (a busy GPU), so the share is marked `!` and a line under the table says
so and how the ceiling is measured again.

The table goes to stdout, or to stderr where --json is this process's stdout (/dev/stdout), so a
pipe gets the JSON alone. The line that names the JSON file says when its folder was created, as
every command that writes an OUT file does, so a typo in a folder's name is seen.
"""

from __future__ import annotations

import sys

from tfdash.profiling.export_files import gz_name
from tfdash.profiling.files import missing_folders_of_file, replaces_file, table_stream, write_json_atomic, wrote_line
from tfdash.profiling.probe import over_ceiling, over_ceiling_note
from tfdash.stats import tokens
from tfdash.textsafe import visible

OVER = "!"  # after a share of the copy ceiling past it (probe.over_ceiling): a line under the table says why
TABLE_HEAD = (f"{'backend':<18}{'tok/s median':>13}{'spread':>19}{'TTFT ms':>9}{'decode tok/s':>13}"
              f"{'ms/step p50':>13}{'GB/s':>9}{'% ceiling':>11}{'launches':>10}{'compile s':>11}")


def header_line(model: str, ckpt: str | None, prompt_tokens: int, new_tokens: int, capacity: int, rounds: int,
                probe) -> str:
    """The table's first line: what ran, on what, how often, against which ceiling (a count of one
    is singular: `1 prompt token + 1 new token`, `1 round`)."""
    return (f"tfdash bench · {model} · {'random weights' if not ckpt else ckpt} · "
            f"{tokens(prompt_tokens, 'prompt ')} + {tokens(new_tokens, 'new ')} · capacity {capacity} · "
            f"{rounds} round{'' if rounds == 1 else 's'} · "
            f"copy ceiling {probe.bandwidth / 1e12:.2f} TB/s ({probe.method})")


def table_row(name: str, s: dict) -> str:
    """A backend's row of summary_row's figures; a share of the ceiling past it is marked OVER."""
    def num(v, fmt):
        return "-" if v is None else format(v, fmt)

    pct = s["pct_of_copy_ceiling"]
    return (f"{name:<18}{s['tok_per_s_median']:>13.1f}{s['tok_per_s_min']:>9.1f} - {s['tok_per_s_max']:<7.1f}"
            f"{num(s.get('ttft_ms'), '.1f'):>9}{num(s.get('decode_tok_per_s'), '.1f'):>13}"
            f"{num(s['ms_per_step_p50'], '.3f'):>13}{s['achieved_gbps']:>9.0f}{pct:>10.1f}%"
            f"{OVER if over_ceiling(pct) else ' '}{num(s.get('launches_per_step'), 'd'):>9}"  # the mark in the gutter
            f"{num(s.get('compile_s'), '.0f'):>11}")


def table_lines(header: str, summary: dict[str, dict], ceiling_source: str = "") -> list[str]:
    """The table: `header`, the column heads, a row per backend of `summary` (summary_row's, by name),
    tilelang-graph against the fastest backend that is not tilelang's, where both ran, and, where a
    backend's share of the ceiling is past it, why (once: every row is priced on one ceiling, whose
    probe's line is `ceiling_source`)."""
    lines = [header, TABLE_HEAD] + [table_row(name, s) for name, s in summary.items()]
    best_peer = max((n for n in summary if not n.startswith("tilelang")), default=None,
                    key=lambda n: summary[n]["tok_per_s_median"])
    if "tilelang-graph" in summary and best_peer:
        lines.append(f"tilelang-graph / {best_peer} (the strongest peer here): "
                     f"{summary['tilelang-graph']['tok_per_s_median'] / summary[best_peer]['tok_per_s_median']:.2f}x")
    over = next((s["pct_of_copy_ceiling"] for s in summary.values() if over_ceiling(s["pct_of_copy_ceiling"])), None)
    note = over_ceiling_note(over, ceiling_source)  # "" where none is over
    return lines + ([f"{OVER} {note}"] if note else [])


def write_report(lines: list[str], json_path: str | None, payload: dict | None) -> None:
    """Print the table; with --json, write `payload` to its file and name it on stderr."""
    # --json /dev/stdout: stdout is the JSON alone; a checkpoint's name or a peer's error shown, never sent as is
    print(visible("\n".join(lines), keep="\n"), file=table_stream(json_path))
    if json_path:
        new, replaced = missing_folders_of_file(json_path), replaces_file(json_path)  # before the write
        write_json_atomic(json_path, payload, gz=gz_name(json_path))
        print(wrote_line(json_path, new, replaced), file=sys.stderr)
