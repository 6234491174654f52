"""Labels that must be read, read against the screen at 3:1 or better in every theme (WCAG's
ratio, from the colours of the SVG screenshot the app exports): the drill-down's tabs not shown."""

from __future__ import annotations

import html
import re

import pytest
from fixtures.appkit import SNAPSHOT, isolated_config, sync  # noqa: F401  (fixture)
from test_app_timeline import contrast

from tfdash.app.main import snapshot_app


def fills_of(svg: str, words: str) -> list[str]:
    """The colours the screenshot draws `words` in."""
    fills = dict(re.findall(r"(terminal-\d+-r\d+) \{ fill: (#[0-9a-fA-F]{6})", svg))
    return [fills[cls] for cls, text in re.findall(r'<text class="([^"]+)"[^>]*>([^<]*)</text>', svg)
            if words in html.unescape(text).replace("\xa0", " ") and cls in fills]


@pytest.mark.parametrize("theme", ["tfdash-dark", "tfdash-light", "tfdash-contrast"])
@sync
async def test_the_drill_downs_other_tabs_can_be_read(isolated_config, theme):
    """Textual draws the tabs not shown at half the foreground's strength: 2.6:1 in the light theme."""
    app = snapshot_app(SNAPSHOT, theme=theme, tilelang_source=lambda f: "def x():\n    ...\n")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("enter")
        for _ in range(3):
            await pilot.pause()
        svg = app.export_screenshot()
        ground = [app.theme_variables[k] for k in ("background", "surface")]
    for label in ("generated CUDA", "marginal cost", "counters"):
        found = fills_of(svg, label)
        assert found, label
        assert min(contrast(f, g) for f in found for g in ground) >= 3, (theme, label, found, ground)
