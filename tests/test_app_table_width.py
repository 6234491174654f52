"""The kernel table at wide terminals: its columns take the pane's width, the % of step bar widened
by what the columns leave over and the kernel each row runs beside them where it fits. At 160 and
200 columns it had drawn a six-cell bar and left a band of 25 to 60 empty columns to its right."""

from __future__ import annotations

from fixtures.appkit import SNAPSHOT, isolated_config, sync  # noqa: F401  (fixture)
from test_app_fit import screen_text, settle

from tfdash.app.main import snapshot_app


def table_lines(app) -> list[str]:
    """The kernel table's lines as drawn (its header and rows), inside the pane's border."""
    r = app.screen.query_one("#kernel-table").region
    pane = app.screen.query_one("#kernels").region
    return [line[pane.x + 1:pane.right - 1] for line in screen_text(app).splitlines()[r.y:r.bottom]]


@sync
async def test_the_kernel_table_uses_a_wide_panes_width(isolated_config):
    app = snapshot_app(SNAPSHOT, theme="tfdash-dark")
    async with app.run_test(size=(160, 48)) as pilot:
        for size, kernel_column in (((160, 48), False), ((200, 50), True), ((180, 50), True)):
            await pilot.resize_terminal(*size)
            await settle(pilot)
            lines = [line for line in table_lines(app) if line.strip()]
            # the widest row reaches the pane's right side: the last column's cell of padding and
            # the two cells KernelTable keeps for its scrollbar, no cell more
            blank = min(len(line) - len(line.rstrip()) for line in lines)
            assert blank <= 3, (size, blank, lines[:3])
            gate_up = next(line for line in lines if line.lstrip().startswith("gate_up"))
            assert gate_up.count("█") > 6, (size, gate_up)  # the costliest op's bar, widened
            assert ("gemv_down_silu_residual" in "\n".join(lines)) == kernel_column, (size, lines[:4])
            assert "bound by" in lines[0], (size, lines[0])


def test_the_readme_names_the_columns_in_the_order_a_narrow_table_drops_them():
    """The README's "drops columns by priority (... first" is COLUMN_PRIORITY read from its end (meas
    bytes and p90 left unsaid: they show only once measured). The kernel column, dropped first,
    was missing from it."""
    import re

    from conftest import REPO

    from tfdash.app.model import COLUMN_PRIORITY

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    said = re.search(r"drops columns\s+by priority \(([^;]+) first;", readme).group(1).split(", ")
    keys = {"the kernel": "kernel", "bound-by": "bound", "count": "count", "GB/s": "gbps", "predicted": "predicted"}
    dropped = [k for k in reversed(COLUMN_PRIORITY) if k not in ("meas_bytes", "p90")]
    assert [keys.get(w, w) for w in said] == dropped[:len(said)]
