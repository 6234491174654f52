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
    write_report(lines, str(out), {"table": lines})  # there now: replaced, no folder made
    assert capsys.readouterr().err.splitlines() == [f"# wrote {out} (replacing the file there)"]


def test_a_share_over_the_ceiling_is_marked_and_said_once(monkeypatch, tmp_path):
    """Two backends priced on a probe that read low printed "512.0%" as fast engines. Their shares are
    marked `!` in the gutter before the launches (every column stays where it was) and one line under
    the table says why; a share under the ceiling shows none of it."""
    monkeypatch.setenv("TFDASH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the cache is named whole, not from a home above it
    source = "probe: cuda d2d copy 2x2 GiB, median of 5, NVIDIA H100 80GB HBM3, 2026-12-06"
    rows = {"tilelang-graph": summary(900.0, 3400.0, 512.0), "torch-compile": summary(600.0, 2300.0, 346.3),
            "hf-compile": summary(200.0, 700.0, 99.0, launches=None)}
    lines = table_lines(HEADER, rows, source)
    assert lines[-1] == f"! over the ceiling: probe read low; delete {tmp_path / 'cache' / 'bandwidth.json'}"
    assert sum("over the ceiling" in line for line in lines) == 1
    head, table = lines[1], lines[2:5]
    end = head.index("% ceiling") + len("% ceiling")  # the column's right edge
    assert [row[end - 6:end + 1] for row in table] == ["512.0%!", "346.3%!", " 99.0% "], table
    assert {len(row) for row in table} == {len(head)}  # launches and compile s where they were
    launches = head.index("launches") + len("launches")
    assert [row[end + 1:launches].strip() for row in table] == ["143", "143", "-"], table
    under = table_lines(HEADER, {"tilelang-graph": summary(900.0, 3400.0, 80.3)}, source)
    assert "!" not in "".join(under[2:]) and not any("over the ceiling" in line for line in under)


def test_a_checkpoint_name_with_control_characters_is_shown_not_sent(capsys):
    """The table's header names the checkpoint (a folder's name, untrusted text): an escape in it
    reached the terminal as it was."""
    lines = table_lines("tfdash bench · ck\x1b[2J · /data/ck\x1b[2J · ...",
                        {"tilelang-graph": summary(900.0, 3400.0, 80.3)})
    write_report(lines, None, None)
    out = capsys.readouterr().out
    assert "\x1b" not in out and out.startswith("tfdash bench · ck\u241b[2J · /data/ck\u241b[2J")
