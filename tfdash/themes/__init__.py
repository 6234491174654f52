"""tfdash's Textual themes and the app's stylesheet.

Three themes are registered with the app: `tfdash-dark` (the default), `tfdash-light` and
`tfdash-contrast` (high contrast: pure black, white and saturated signal colours). The .tcss beside
this file styles every pane through theme variables only ($primary, $surface, $panel, ...), plus
three of our own that each theme defines:

    $tf-good    a kernel near its roofline ideal (gap x <= 1.5)
    $tf-fair    within 3x of it
    $tf-poor    more than 3x off
    $tf-border  a pane's border when it does not have focus
"""

from __future__ import annotations

from pathlib import Path

from textual.theme import Theme

CSS_PATH = Path(__file__).with_name("app.tcss")
DEFAULT_THEME = "tfdash-dark"

PALETTE = ("primary", "secondary", "accent", "warning", "error", "success", "foreground", "background",
           "surface", "panel")
SIGNALS = ("tf-good", "tf-fair", "tf-poor", "tf-border")  # the stylesheet's own variables
CURSOR = ("footer-key-foreground", "block-cursor-background", "block-cursor-foreground")


def _theme(name: str, dark: bool, palette: tuple, signals: tuple, cursor: tuple, more=None, **extra) -> Theme:
    """A Theme from its colours: `palette` in PALETTE's order, `signals` in SIGNALS', `cursor` in
    CURSOR's, `more` other Textual variables, `extra` other Theme fields."""
    variables = {**dict(zip(SIGNALS, signals, strict=True)), **(more or {}), **dict(zip(CURSOR, cursor, strict=True))}
    return Theme(name=name, dark=dark, variables=variables, **dict(zip(PALETTE, palette, strict=True)), **extra)


DARK = _theme("tfdash-dark", True,
              ("#4C9AFF", "#8A7CFF", "#FFB454", "#FFB454", "#F26D6D", "#5CCB8A", "#D8DEE9", "#0E1117", "#141922",
               "#1C2330"),
              ("#5CCB8A", "#FFB454", "#F26D6D", "#2B3444"), ("#4C9AFF", "#2A4A7A", "#F0F4FA"))
LIGHT = _theme("tfdash-light", False,
               ("#1F5FBF", "#6A4FD0", "#B35C00", "#B35C00", "#C0362C", "#1E7F4F", "#1D232C", "#F4F6F9", "#FFFFFF",
                "#E6EAF0"),
               ("#1E7F4F", "#B35C00", "#C0362C", "#C3CBD6"), ("#1F5FBF", "#C9DCF7", "#0B1320"))
# high contrast: pure black and white, saturated signals, no dimmed text
CONTRAST = _theme("tfdash-contrast", True,
                  ("#FFFF00", "#00FFFF", "#FF00FF", "#FFFF00", "#FF4040", "#00FF00", "#FFFFFF", "#000000", "#000000",
                   "#000000"),
                  ("#00FF00", "#FFFF00", "#FF4040", "#FFFFFF"), ("#FFFF00", "#FFFF00", "#000000"),
                  more={"border": "#FFFFFF", "border-blurred": "#BBBBBB", "block-cursor-blurred-background": "#777700"},
                  luminosity_spread=0.0, text_alpha=1.0)

THEMES: dict[str, Theme] = {t.name: t for t in (DARK, LIGHT, CONTRAST)}


_RENDERS: dict[int, tuple[Theme, bool]] = {}  # id -> (the theme, kept alive; whether it renders)


def renders(theme: Theme) -> bool:
    """Whether the app's stylesheet resolves every variable and colour with this theme (cached)."""
    if id(theme) not in _RENDERS:
        ok = False
        try:
            from textual.css.stylesheet import Stylesheet

            tf = {k: v for k, v in DARK.variables.items() if k.startswith("tf-")}
            sheet = Stylesheet(variables={**tf, **theme.to_color_system().generate(), **theme.variables})
            sheet.read(CSS_PATH)
            sheet.parse()
            ok = True
        except Exception:  # noqa: BLE001 - any failure means: not offered
            pass
        _RENDERS[id(theme)] = (theme, ok)
    return _RENDERS[id(theme)][1]


def offered(registered: dict[str, Theme]) -> dict[str, Theme]:
    """The themes the app offers (`^t`, the config file): tfdash's own that render."""
    return {name: t for name, t in registered.items() if name in THEMES and renders(t)}


def register_themes(app) -> None:
    """Register every tfdash theme with a Textual app."""
    for theme in THEMES.values():
        app.register_theme(theme)
