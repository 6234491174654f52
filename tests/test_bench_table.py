"""`tfdash bench`'s report on CPU (its measurements stand in): the table's rows, and the --json file
with the line that names it."""

from __future__ import annotations

import json

from tfdash.profiling.bench_table import table_lines, write_report

HEADER = "tfdash bench · qwen3-1.7b · random weights · ..."


def summary(tok_s: float, gbps: float, pct: float, launches: int | None = 143) -> dict:
    return {"tok_per_s_median": tok_s, "tok_per_s_min": tok_s - 2, "tok_per_s_max": tok_s + 2, "ttft_ms": 40.0,
            "decode_tok_per_s": tok_s + 1, "ms_per_step_p50": 1000 / tok_s, "achieved_gbps": gbps,
            "pct_of_copy_ceiling": pct, "launches_per_step": launches}


def test_json_into_a_new_folder_says_the_folder_was_made(tmp_path, capsys):
    """`bench --json no/such/b.json` made the folders and said only "# wrote ...": a typo in a
    folder's name went unseen. It says so as `tfdash diff` does."""
    lines = table_lines(HEADER, {"tilelang-graph": summary(900.0, 3400.0, 80.3)})
    out = tmp_path / "no" / "such" / "b.json"
    write_report(lines, str(out), {"table": lines})
    printed = capsys.readouterr()
    assert printed.out.splitlines() == lines
    assert printed.err.splitlines() == [f"# wrote {out} (its folder {out.parent} was created)"]
    assert json.loads(out.read_text()) == {"table": lines}
    write_report(lines, str(out), {"table": lines})  # there now: nothing made
    assert capsys.readouterr().err.splitlines() == [f"# wrote {out}"]
