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

DARK = Theme(
    name="tfdash-dark",
    primary="#4C9AFF",
    secondary="#8A7CFF",
    accent="#FFB454",
    warning="#FFB454",
    error="#F26D6D",
    success="#5CCB8A",
    foreground="#D8DEE9",
    background="#0E1117",
    surface="#141922",
    panel="#1C2330",
    dark=True,
    variables={
        "tf-good": "#5CCB8A",
        "tf-fair": "#FFB454",
        "tf-poor": "#F26D6D",
        "tf-border": "#2B3444",
        "footer-key-foreground": "#4C9AFF",
        "block-cursor-background": "#2A4A7A",
        "block-cursor-foreground": "#F0F4FA",
    },
)

LIGHT = Theme(
    name="tfdash-light",
    primary="#1F5FBF",
    secondary="#6A4FD0",
    accent="#B35C00",
    warning="#B35C00",
    error="#C0362C",
    success="#1E7F4F",
    foreground="#1D232C",
    background="#F4F6F9",
    surface="#FFFFFF",
    panel="#E6EAF0",
    dark=False,
    variables={
        "tf-good": "#1E7F4F",
        "tf-fair": "#B35C00",
        "tf-poor": "#C0362C",
        "tf-border": "#C3CBD6",
        "footer-key-foreground": "#1F5FBF",
        "block-cursor-background": "#C9DCF7",
        "block-cursor-foreground": "#0B1320",
    },
)

CONTRAST = Theme(
    name="tfdash-contrast",
    primary="#FFFF00",
    secondary="#00FFFF",
    accent="#FF00FF",
    warning="#FFFF00",
    error="#FF4040",
    success="#00FF00",
    foreground="#FFFFFF",
    background="#000000",
    surface="#000000",
    panel="#000000",
    dark=True,
    luminosity_spread=0.0,
    text_alpha=1.0,
    variables={
        "tf-good": "#00FF00",
        "tf-fair": "#FFFF00",
        "tf-poor": "#FF4040",
        "tf-border": "#FFFFFF",
        "border": "#FFFFFF",
        "border-blurred": "#BBBBBB",
        "footer-key-foreground": "#FFFF00",
        "block-cursor-background": "#FFFF00",
        "block-cursor-foreground": "#000000",
        "block-cursor-blurred-background": "#777700",
    },
)

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
