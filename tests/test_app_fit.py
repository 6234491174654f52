"""What a user sees in terminals of every size: numbers are never cut short, a header names each
item whole, and what does not fit is left out whole (or wraps between items)."""

from __future__ import annotations

import io
import re

import pytest
from fixtures.appkit import SNAPSHOT, isolated_config, sync  # noqa: F401  (fixture)

from tfdash.app.main import snapshot_app
from tfdash.app.model import fmt_gap, fmt_gbps, fmt_ns
from tfdash.profiling.export import load_snapshot


def make_app(**kw):
    return snapshot_app(SNAPSHOT, theme="tfdash-dark", tilelang_source=lambda f: f"def {f}():\n    ...\n", **kw)


def screen_text(app) -> str:
    from rich.console import Console

    w, h = app.size
    c = Console(width=w, height=h, file=io.StringIO(), force_terminal=True, record=True, legacy_windows=False)
    c.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return c.export_text()


def toast_lines(app) -> list[str]:
    """The lines of the toasts on screen, read from the screen inside each toast's box."""
    lines = screen_text(app).splitlines()
    out = []
    for toast in app.screen.query("Toast"):
        r = toast.region
        out += [t for t in (lines[y][r.x + 1:r.right].strip() for y in range(r.y, min(r.bottom, len(lines)))) if t]
    return out


async def settle(pilot) -> None:
    for _ in range(3):
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()


def pane_cells(line: str, pane: int = 0) -> list[str]:
    """The cells of one table line inside a pane on it (between its two borders; 0: the first),
    less the scrollbar's glyph against its right border."""
    inner = line.split("│")[1 + 2 * pane]
    inner = inner[:-1] if re.fullmatch(r"[▁-█]", inner[-1:]) else inner
    return [c for c in re.split(r" {2,}", inner.strip()) if c]


@pytest.mark.parametrize("size", [(160, 48), (100, 30), (80, 24)])
@sync
async def test_the_drill_downs_instances_show_whole_columns(isolated_config, size):
    """The instances table drops the columns that do not fit (← → switch tabs there, so it cannot
    be scrolled sideways): each header it shows is whole and each number under it too."""
    snap = load_snapshot(SNAPSHOT)
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("enter")  # gate_up: 28 instances, L0..L27
        await settle(pilot)
        lines = screen_text(app).splitlines()
    header = next(line for line in lines if "│ launch" in line)
    shown = pane_cells(header)
    assert shown[:3] == ["launch", "predicted", "measured"], header
    assert set(shown) <= {"launch", "predicted", "measured", "p90", "gap ×", "GB/s"}, header
    k = next(k for k in snap.kernels if k.role == "L0.gate_up")
    want = {"launch": k.role, "predicted": fmt_ns(k.predicted_ns), "measured": fmt_ns(k.measured_p50_ns),
            "p90": fmt_ns(k.measured_p90_ns), "gap ×": fmt_gap(k.gap), "GB/s": fmt_gbps(k.achieved_gbps, "")}
    row = next(line for line in lines if "│ L0.gate_up" in line)
    assert pane_cells(row) == [want[h] for h in shown], (header, row)


@pytest.mark.parametrize("size", [(160, 48), (100, 30), (80, 24)])
@sync
async def test_against_a_baseline_the_instances_keep_their_delta(isolated_config, size):
    """With a baseline the instances' Δ column is the last number dropped but the measured time,
    as the kernel table never drops its Δ: at 80x24 a launch's move stays on the screen."""
    app = make_app(baseline=SNAPSHOT)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        lines = screen_text(app).splitlines()
    header = next(line for line in lines if "│ launch" in line)
    shown = pane_cells(header)
    assert {"launch", "measured", "Δ"} <= set(shown) and shown[-1] == "Δ", header
    row = pane_cells(next(line for line in lines if "│ L0.gate_up" in line))
    assert len(row) == len(shown) and row[shown.index("Δ")].startswith(("0", "+0", "-0")), row


@pytest.mark.parametrize("size", [(160, 48), (100, 30), (80, 24), (160, 48, 80, 24)])
@sync
async def test_the_drill_downs_operands_show_whole_columns(isolated_config, size):
    """The cost-by-operand table, like the instances beside it, drops the columns that do not fit
    (the share % right after the operand): each header it shows is whole, and each cell under it;
    it fits again when the terminal is resized."""
    from tfdash.app import drill_model
    from tfdash.app.model import fmt_bytes, fmt_num

    snap = load_snapshot(SNAPSHOT)
    members = tuple(k.index for k in snap.kernels if k.role.endswith(".down"))
    ops = drill_model.operand_costs(drill_model.plan_of(snap), members, drill_model.ctx_of(snap))
    total = sum(o.read + o.written for o in ops)
    app = make_app()
    async with app.run_test(size=size[:2]) as pilot:
        await settle(pilot)
        await pilot.press("down", "enter")  # down: w, x, out
        await settle(pilot)
        if len(size) > 2:
            await pilot.resize_terminal(*size[2:])
            await settle(pilot)
        lines = screen_text(app).splitlines()
    at = next(i for i, line in enumerate(lines) if "│ operand" in line)
    shown = pane_cells(lines[at], 1)
    assert shown[0] == "operand" and "%" in shown, lines[at]
    assert set(shown) <= {"operand", "kind", "read", "written", "%", "buffer"}, lines[at]
    short = {"activation": "act", "weight": "weight", "cache": "KV cache", "table": "table"}
    rows = [line for line in lines[at + 1:at + 1 + len(ops)] if line.startswith("│")]  # 80x24: 2 of 3
    assert rows
    for o, line in zip(ops, rows):
        want = {"operand": o.role, "kind": short.get(o.kind, o.kind), "read": fmt_bytes(o.read) if o.read else "—",
                "written": fmt_bytes(o.written) if o.written else "—",
                "%": fmt_num(100 * (o.read + o.written) / total, 1), "buffer": o.buffers}
        assert pane_cells(line, 1) == [want[h] for h in shown], (lines[at], line)


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (160, 48)])
@sync
async def test_the_drill_downs_operands_say_how_many_are_shown(isolated_config, size):
    """Under a GEMV's dims and geometry at 80x24 the cost-by-operand table has room for three of
    gate_up's four operands: its border says "3 of 4 operands shown" (the table had run on past the
    pane's border, three rows cut with nothing said). Where every row fits, nothing is said."""
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("enter")  # gate_up: w, out, x, norm_w
        await settle(pilot)
        r = app.screen.query_one("#operands").region
        lines = screen_text(app).splitlines()
    inside = [line[r.x + 1:r.right - 1].strip() for line in lines[r.y + 1:r.bottom - 1]]
    shown = [x for x in inside if x.split()[:1] in (["w"], ["out"], ["x"], ["norm_w"])]
    bottom = lines[r.bottom - 1][r.x:r.right]
    if len(shown) < 4:
        assert f"{len(shown)} of 4 operands shown" in bottom, (size, inside, bottom)
    else:
        assert "operands shown" not in bottom, (size, bottom)
    assert (len(shown) < 4) == (size == (80, 24)), (size, inside)


@pytest.mark.parametrize("size", [(200, 60), (120, 40), (100, 30), (80, 24)])
@sync
async def test_the_header_shows_whole_items(isolated_config, size):
    """The top bar names the run in items ("143 launches/step", "bfloat16"); what does not fit is
    left out whole, never a number without its unit."""
    from tfdash.app.screens.main import describe_run

    snap = load_snapshot(SNAPSHOT)
    items = describe_run(snap).split(" · ")
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        top = screen_text(app).splitlines()[0]
        await pilot.press("enter")  # the drill-down's header too
        await settle(pilot)
        drill_top = screen_text(app).splitlines()[0]
    title = top.split("│", 1)[1].split("snapshot · snapshot-1.7b.json")[0].strip()
    shown = title.split(" · ")
    assert shown[0] == items[0] and all(s in items for s in shown), top
    if size[0] >= 200:
        assert shown == items, top
    assert "drill-down · op gate_up" in drill_top, drill_top


@pytest.mark.parametrize("size", [(100, 30), (80, 24)])
@sync
async def test_the_timelines_summary_wraps_between_items_and_keeps_its_key(isolated_config, size):
    """The timeline's summary breaks its line between items (never "0.00" from its "µs") and the
    key to its glyphs (█ ▒ ·) stays on the screen, with the 8 steps a CPU profile window keeps
    (at 80 columns "(8 of 8 kept)" puts the zoom on a second line; below 80x24 the timeline is the
    size line, tests/test_app_min_size.py)."""
    from dataclasses import replace

    snap = load_snapshot(SNAPSHOT)
    spans = tuple(replace(s, step=1024 + i, start_ns=s.start_ns + i * 2_000_000) for i in range(8)
                  for s in snap.timeline)
    app = snapshot_app(replace(snap, timeline=spans), theme="tfdash-dark")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("T")
        await settle(pilot)
        lines = screen_text(app).splitlines()
    top = lines[1:lines.index(next(line for line in lines if line.startswith("╭")))]
    assert any("█ alone" in line and "▒ overlapping" in line for line in top), "\n".join(top)
    for line in top:
        assert not re.match(r"^\s*(µs|ns|ms)\b", line), "\n".join(top)  # a unit torn from its number
        assert not re.search(r"\d\s*$", line) or line.rstrip().endswith("kept)"), "\n".join(top)


@pytest.mark.parametrize("size", [(100, 30), (80, 24)])
@sync
async def test_the_contended_host_warning_is_read_to_its_end(isolated_config, size):
    """On a contended CPU host the line under the kernel table says so and what to do about it
    (--threads N, --headless); in a narrow terminal in fewer words rather than losing the remedy."""
    from dataclasses import replace

    snap = load_snapshot(SNAPSHOT)
    steps = tuple(1_000_000 * (5 if i % 20 == 0 else 1) for i in range(len(snap.step_ns)))  # p99 5× p50
    cpu = replace(snap, meta=replace(snap.meta, device="cpu", gpu=None), step_ns=steps)
    app = snapshot_app(cpu, theme="tfdash-dark")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        shown = screen_text(app)
    text = " ".join(line.strip("│ ") for line in shown.splitlines())
    assert "× p50: " in text
    assert "--threads N or --headless" in text or "--headless to time" in text, shown


@sync
async def test_the_contended_host_warning_takes_one_row_after_the_terminal_shrinks(isolated_config):
    """Shrunk from 160x48 to 80x24, the warning under the kernel table is its short wording on one
    row, the table's border right under it: it had kept the two rows the long wording wrapped to
    at the new width, one of them blank, a kernel row fewer."""
    from dataclasses import replace

    snap = load_snapshot(SNAPSHOT)
    steps = tuple(1_000_000 * (5 if i % 20 == 0 else 1) for i in range(len(snap.step_ns)))
    cpu = replace(snap, meta=replace(snap.meta, device="cpu", gpu=None), step_ns=steps)
    app = snapshot_app(cpu, theme="tfdash-dark")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        for size in ((80, 24), (100, 30), (80, 24)):
            await pilot.resize_terminal(*size)
            await settle(pilot)
            lines = screen_text(app).splitlines()
            at = next(i for i, line in enumerate(lines) if "⚠" in line)
            assert lines[at + 1].startswith("╰"), (size, lines[at - 1:at + 2])


def help_rows(text: str) -> list[tuple[str, str]]:
    """(does, id) of each help row on this screen: "does" joined across its wrapped lines; a
    section's heading (a place's name alone in "does") starts no row and ends the one before."""
    from tfdash.app import bindings

    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if re.search(r"key\s+does\s+id\b", line))
    header = lines[at]
    x_does, x_id = header.index("does"), header.index(" id ") + 1
    rows: list[list[str]] = []
    for line in lines[at + 1:]:
        if "esc to close" in line:
            break
        end = line.index("│", x_id)  # the help box's right border
        head, does, bid = line[:x_does], line[x_does:x_id].strip(), re.sub(r"[▁-█]", "", line[x_id:end]).strip()
        if re.search(r"\S", head.split("│")[-1]):  # a key: a row starts
            rows.append([does, bid])
        elif does.startswith("── ") and does.strip("─ ") in bindings.SCOPES and not bid:
            rows.append(["", ""])
        elif rows and does and not bid:
            rows[-1][0] += " " + does
    return [(d, b) for d, b in rows]  # the last may go on below the screen: seen whole further down


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
@sync
async def test_the_help_shows_every_key_its_whole_description_and_its_id(isolated_config, size):
    """The help's "does" column wraps so that the id (what a keymap names) stays on the screen,
    whole: walking down the table shows every binding's description and id, none cut."""
    from tfdash.app import bindings

    want = {(bindings.tooltip(None, b), b.id) for t in bindings.SCOPES.values() for b in t}  # keys named as bound
    app = make_app()
    seen: set[tuple[str, str]] = set()
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        for _ in range(len(want) + len(bindings.SCOPES)):  # each key's row and each section's heading
            seen |= set(help_rows(screen_text(app)))
            await pilot.press("down")
            await pilot.pause()
    assert want - seen == set(), sorted(want - seen)[:5]


@sync
async def test_home_and_end_take_the_help_to_its_first_and_last_keys(isolated_config):
    """The help's table has nothing to its side, so Home and End go to its ends, not sideways."""
    from tfdash.app import bindings

    last = list(bindings.SCOPES.values())[-1][-1]  # the help's last section's last key
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        await pilot.press("end")
        await settle(pilot)
        at_end = help_rows(screen_text(app))
        await pilot.press("home")
        await settle(pilot)
        at_home = screen_text(app)
    assert at_end[-1] == (last.tooltip, last.id), at_end
    assert "── everywhere" in at_home and "Stop the engine cleanly" in at_home, at_home


@sync
async def test_the_drill_down_of_a_family_names_it_once(isolated_config):
    """Grouped by family, the drill-down's summary reads "family attention", not "attention
    family  family attention"."""
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("g")  # op -> family
        await settle(pilot)
        await pilot.press("down", "enter")
        await settle(pilot)
        lines = screen_text(app).splitlines()
    family = lines[0].split("drill-down · family ")[1].split()[0]
    summary = " ".join(lines[1:3])
    assert summary.split()[:3] == ["family", family, "kernel"], summary
    assert summary.count("family") == 1, summary


@sync
async def test_the_sweep_caption_scales_its_times_as_the_summary_does(isolated_config):
    """The ctx_len sweep's caption writes a time past 1,000 µs in ms, as the summary above it and
    every other pane do ("1.408 ms", never "1,408.2 µs")."""
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("g")  # family: gemv, the costliest, takes 1.4 ms a step
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        lines = screen_text(app).splitlines()
    summary = " ".join(lines[1:3])
    at = next(i for i, line in enumerate(lines) if "ctx_len sweep" in line)
    sweep = " ".join(line.split("│")[5].strip() for line in lines[at + 1:at + 5])
    measured = re.search(r"measured (\S+ (?:ns|µs|ms|s))\b", summary).group(1)
    assert measured.endswith(" ms"), summary
    assert f"measured {measured} @ 1,024" in sweep, sweep
    assert not re.search(r"\d,\d{3}\.\d µs", sweep), sweep


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (120, 40)])
@sync
async def test_the_summary_line_gives_nvmls_reason_whole(isolated_config, size):
    """Where NVML could not be read, the line under the header says why, whole: at 80 columns
    the reason goes on a line of its own rather than stopping at "NVML not found:"."""
    from dataclasses import replace

    why = "NVML not found: libnvidia-ml.so.1 missing (no NVIDIA driver)"
    snap = load_snapshot(SNAPSHOT)
    cpu = replace(snap, meta=replace(snap.meta, device="cpu", gpu=None), nvml=(),
                  unavailable={**snap.unavailable, "nvml": why})
    app = snapshot_app(cpu, theme="tfdash-dark")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        lines = screen_text(app).splitlines()
    top = lines[1:lines.index(next(line for line in lines if line.startswith("╭")))]
    assert any(why in line for line in top), "\n".join(top)
    assert any("NVML unavailable:" in line for line in top), "\n".join(top)
    if size[0] < 116:  # the roofline is summed up there too
        assert any("roofline 1.748 ms/step" in line for line in top), "\n".join(top)


@sync
async def test_v_at_80x24_without_nvml_gives_the_roofline_pane_its_every_line(isolated_config):
    """`v` at 80x24 on a host without NVML drew an empty NVML pane over half the screen and cut the
    roofline pane after "of datasheet" (a scrollbar thumb in its GB/s line): its gap bar, gaps,
    step ÷ floor and tok/s ceiling were out of sight. The NVML pane that has nothing goes, its
    reason in the line under the header, and the roofline pane shows every line."""
    from dataclasses import replace

    why = "NVML not found: libnvidia-ml.so.1 missing (no NVIDIA driver)"
    snap = load_snapshot(SNAPSHOT)
    cpu = replace(snap, meta=replace(snap.meta, device="cpu", gpu=None), nvml=(),
                  unavailable={**snap.unavailable, "nvml": why})
    app = snapshot_app(cpu, theme="tfdash-dark")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        lines = screen_text(app).splitlines()
    text = "\n".join(lines)
    assert "╭─ NVML" not in text, text
    assert any(why in line for line in lines[1:4]) and "throughput 569.7 tok/s" in lines[1], text
    for label in ("bytes/step", "of datasheet", "floor  ■ kernels over it", "step ÷ floor", "tok/s ceiling"):
        assert label in text, (label, text)


@pytest.mark.parametrize("size", [(160, 48), (80, 24), (84, 24), (128, 40)])
@sync
async def test_s_sorts_only_by_a_column_on_the_screen(isolated_config, size):
    """The caption names the column the table is sorted by, and `s` walks only the columns on the
    screen: at 80 columns not count or bound-by, which the table leaves out for want of width. A
    column that fits only without the sort mark stays on the screen once sorted by (at 84 and 128
    columns count had gone, and `s` went back to op from it: op, count, op, count, ...)."""
    app = make_app()
    names = []
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        for _ in range(12):
            await pilot.press("s")
            await settle(pilot)
            lines = screen_text(app).splitlines()
            caption = next(line for line in lines if "│ group " in line)
            header = next(line for line in lines if re.search(r"│ op\s", line))
            name = re.search(r"sort (.+?) [▼▲]", caption).group(1)
            names.append(name)
            assert f"{name} ▼" in header or f"{name} ▲" in header or name == "op", (caption, header)
    after_op = names[names.index("op") + 1:]
    assert {"predicted", "measured"} <= set(after_op), names



@pytest.mark.parametrize("sizes", [((160, 48), (80, 24)), ((80, 24), (120, 40))])
@sync
async def test_the_kernel_table_shows_whole_cells_after_a_resize(isolated_config, sizes):
    """Resized, the kernel table shows the columns that fit the new width with every cell whole
    (it had drawn them at their headers' widths: "ga" for gate_up, "431" for 431.4 µs)."""
    snap = load_snapshot(SNAPSHOT)
    gate_up = [k for k in snap.kernels if k.role.endswith(".gate_up")]
    p90 = fmt_ns(sum(k.measured_p90_ns for k in gate_up))
    app = make_app()
    async with app.run_test(size=sizes[0]) as pilot:
        await settle(pilot)
        await pilot.resize_terminal(*sizes[1])
        await settle(pilot)
        lines = screen_text(app).splitlines()
    at = next(i for i, line in enumerate(lines) if re.search(r"│ op\s", line))
    header, row = pane_cells(lines[at]), pane_cells(lines[at + 1])  # gate_up, the costliest
    assert row[0] == "gate_up" and len(row) == len(header), (header, row)
    assert ("p90" in header) == (p90 in row), (header, row)


@pytest.mark.parametrize("size", [(60, 20), (40, 15), (100, 23)])
@sync
async def test_a_terminal_below_80x24_is_told_the_size_it_needs(isolated_config, size):
    """Below 80x24 the dashboard is one line that says the size it needs and the key that quits,
    rather than panes run off the edge with numbers cut; resized, the screen comes back as it was
    (every other screen and dialog: tests/test_app_min_size.py)."""
    app = make_app()
    need = f"tfdash needs at least 80×24 (now {size[0]}×{size[1]})"
    want = [f"{need} · q quits"] if size[0] >= 60 else [need, "q quits"]  # the only key that acts there
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        shown = [line.strip() for line in screen_text(app).splitlines() if line.strip()]
        assert shown == want, shown
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        text = screen_text(app)
        assert "needs at least" not in text and "╭─ kernels" in text and "gate_up" in text, text
        await pilot.press("enter")  # the kernel table kept the focus underneath
        await settle(pilot)
        assert "drill-down · op gate_up" in screen_text(app).splitlines()[0]
        await pilot.resize_terminal(*size)
        await settle(pilot)
        shown = [line.strip() for line in screen_text(app).splitlines() if line.strip()]
        assert shown == want, shown


def footer(app) -> str:
    return screen_text(app).splitlines()[-1]


@sync
async def test_the_footer_takes_every_key_that_fits_before_the_palette(isolated_config):
    """The footer stops before the first key that would not fit whole: at 80 columns the dashboard's
    T Timeline and the timeline's 0 Fit fit exactly (the palette key's own width reserved, no more),
    with q and ? kept."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        main = footer(app)
        await pilot.press("T")
        await settle(pilot)
        timeline = footer(app)
    assert main.rstrip() == "⏎ Drill in s Sort / Filter g Group v Panes T Timeline q Quit ? Help ▏^p palette", main
    assert "0 Fit q Quit ? Help ▏^p palette" in timeline, timeline


@sync
async def test_v_is_offered_only_where_a_pane_waits_behind_it(isolated_config):
    """`v` swaps panes that share a place in a narrow terminal; at a width where every pane is on the
    screen it is not in the footer or the palette, and pressing it there changes nothing (in the
    drill-down it no longer swaps, unseen, what a narrower terminal will show)."""
    app = make_app()
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot)
        assert "v Panes" not in footer(app) and "q Quit" in footer(app)
        assert not any(c.title.startswith("Panes") for c in app.get_system_commands(app.screen))
        await pilot.press("enter")
        await settle(pilot)
        assert "drill-down · op gate_up" in screen_text(app) and "Sweep/operands" not in footer(app)
        await pilot.press("v")
        await pilot.resize_terminal(120, 40)
        await settle(pilot)
        text = screen_text(app)
        assert "v Sweep/operands" in footer(app)
        assert "╭─ cost by operand" in text and "╭─ ctx_len sweep" not in text, text
        await pilot.press("escape")
        await settle(pilot)
        assert "╭─ kernels" in screen_text(app) and "v Panes" not in footer(app)
        await pilot.resize_terminal(100, 30)
        await settle(pilot)
        assert "v Panes" in footer(app)
        assert any(c.title == "Panes (v)" for c in app.get_system_commands(app.screen))
        await pilot.press("v")
        await settle(pilot)
        assert "bytes/step" in screen_text(app)  # the roofline pane, in place of the kernel table
        await pilot.resize_terminal(200, 60)
        await settle(pilot)
        assert "v Panes" not in footer(app)


@sync
async def test_at_80x24_the_drill_downs_footer_keeps_v_which_shows_the_sweep(isolated_config):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert "v Sweep/operands" in footer(app) and "╭─ ctx_len sweep" not in screen_text(app)
        await pilot.press("v")
        await settle(pilot)
        assert "╭─ ctx_len sweep" in screen_text(app)


@sync
async def test_at_80x24_the_drill_downs_first_layout_is_the_narrow_one(isolated_config):
    """The drill-down's panes are laid out for 80 columns from the first frame: it was drawn wide
    first (a 62-column instances pane, the cost by operand 2 columns wide, the sweep cut off) until
    the first Resize reached the screen, up to 1.8 s later. The widths are read as each Resize
    arrives, the first of them made on the first layout, before any handler has run."""
    from textual import events

    from tfdash.app.screens.drill import DrillScreen

    widths = []

    def record(message) -> None:
        if isinstance(message, events.Resize) and isinstance(app.screen, DrillScreen):
            widths.append(tuple(app.screen.query_one(p).region.width for p in ("#instances", "#operands", "#sweep")))

    app = make_app()
    async with app.run_test(size=(80, 24), message_hook=record) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await pilot.pause()
    assert widths and widths[0][2] == 0 and min(widths[0][:2]) >= 30, widths  # two panes share the row


@sync
async def test_the_kernel_table_shows_whole_cells_while_a_filter_is_typed(isolated_config):
    """The rows a filter leaves are redrawn at their columns' widths as each letter is typed (they
    were drawn at the headers' widths: "ga" for gate_up, "3,36" for 3,367)."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"gate")
        await settle(pilot)
        lines = screen_text(app).splitlines()
    row = lines[next(i for i, line in enumerate(lines) if re.search(r"│ op\s", line)) + 1]
    assert pane_cells(row)[:2] == ["gate_up", "330.3 µs"] and "3,367" in row, row
    assert any("filter gate  1 row · 28 of 143 launches match" in line for line in lines), lines


@pytest.mark.parametrize("words", ["zzz", "gate_up zzz"])
@sync
async def test_at_80_columns_a_filter_that_matches_nothing_says_so(isolated_config, words):
    """The caption says why the table is empty at 80 columns too: its shortest hint was one column
    too wide there and was left out, leaving an empty table and nothing said."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *words, "enter")
        await settle(pilot)
        lines = screen_text(app).splitlines()
    line = next(line for line in lines if f"filter {words}" in line)
    assert "0 rows" in line and "no op row matches" in line, lines


@sync
async def test_the_footer_offers_drill_in_only_over_a_row(isolated_config):
    """A filter that matches nothing leaves no row to open: ⏎ Drill in leaves the footer (it stayed,
    and did nothing), and comes back with the rows once the filter is cleared."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "⏎ Drill in" in footer(app)
        await pilot.press("slash", *"zzz", "enter")
        await settle(pilot)
        assert "Drill in" not in footer(app) and "s Sort" in footer(app), footer(app)
        await pilot.press("slash", "escape")  # esc in the filter clears it
        await settle(pilot)
        assert "⏎ Drill in" in footer(app), footer(app)


@pytest.mark.parametrize("size", [(80, 24), (130, 26), (120, 40)])
@sync
async def test_a_short_terminal_says_where_the_throughput_chart_went(isolated_config, size):
    """Under 32 rows the throughput pane keeps its numbers and drops its chart; the row the chart's
    key took says from how many rows it is drawn (it had gone with nothing said)."""
    from tfdash.app.layout import SHORT_H

    app = make_app()
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        r = app.screen.query_one("#throughput").region
        lines = screen_text(app).splitlines()
    inside = " ".join(line[r.x + 1:r.right - 1].strip() for line in lines[r.y + 1:r.bottom - 1])
    note = f"ms/step chart from {SHORT_H} rows"
    assert "ms/step p99" in inside and "tokens" in inside, inside
    assert (note in inside) == (size[1] < SHORT_H), inside
    assert ("━ ms/step" in inside) == (size[1] >= SHORT_H), inside


@sync
async def test_a_dialog_closed_over_v_leaves_enter_off_the_hidden_table(isolated_config):
    """At 80x24 `v` puts the kernel table aside; `?` opened and closed there must not hand the focus
    back to that table, or ⏎ (in the footer again) drills into a row no one can see. `v` back shows
    the table and ⏎ drills as before."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert "Drill in" not in footer(app) and "v Panes" in footer(app)
        await pilot.press("enter")
        await settle(pilot)
        assert "drill-down · op" not in screen_text(app) and "bytes/step" in screen_text(app)
        await pilot.press("v")
        await settle(pilot)
        assert "Drill in" in footer(app)
        await pilot.press("enter")
        await settle(pilot)
        assert "drill-down · op gate_up" in screen_text(app)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
@sync
async def test_the_drill_downs_costliest_operands_show_under_a_long_caption(isolated_config, size):
    """Under attention's dims and geometry at 80x24 the caption filled the cost-by-operand pane: "0
    of 9 operands shown", the pane showing nothing of what it is named for. The caption is cut at
    its end ("…") to leave the table the costliest three, and the border counts the rows shown."""
    from tfdash.app import drill_model

    snap = load_snapshot(SNAPSHOT)
    members = tuple(k.index for k in snap.kernels if k.role.endswith(".attention"))
    names = [o.role for o in drill_model.operand_costs(drill_model.plan_of(snap), members, drill_model.ctx_of(snap))]
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("/", *"attention", "enter")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert "attention" in str(app.screen.query_one("#drill-summary").render())
        r = app.screen.query_one("#operands").region
        lines = screen_text(app).splitlines()
    inside = [line[r.x + 1:r.right - 1].strip() for line in lines[r.y + 1:r.bottom - 1]]
    shown = [x for x in inside if x.split()[:1] and x.split()[0] in names]
    bottom = lines[r.bottom - 1][r.x:r.right]
    assert [x.split()[0] for x in shown] == names[:len(shown)] and len(shown) >= 3, (size, inside)
    if len(shown) < len(names):
        assert f"{len(shown)} of {len(names)} operands shown" in bottom, (size, inside, bottom)
    else:
        assert "operands shown" not in bottom, (size, bottom)
    caption = inside[:inside.index(next(x for x in inside if x.startswith("operand ")))]
    assert caption[-1].endswith("…") == (size == (80, 24)), (size, caption)  # cut only where it must be
