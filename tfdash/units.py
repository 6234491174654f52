"""Numbers as the screens and the text reports write them (no UI imports): the dashboard's
table and `tfdash diff` print a gap and a byte count the same way."""


def fmt_gap(v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v:.2f}×" if v < 10 else f"{v:.1f}×" if v < 100 else f"{v:,.0f}×"


def fmt_bytes(b: float | None) -> str:
    if b is None:
        return "—"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(b) >= scale:
            return f"{b / scale:.2f} {unit}"
    return f"{b:.0f} B"
