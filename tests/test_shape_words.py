"""A baseline is compared by the model's shape and the dtype run in (diff.NOT_THE_SHAPE), not by
the model's name: the words on screen and in --help said "same model" / "another model or dtype",
and now say shape."""

import re

from tfdash.app.bindings import PICKER
from tfdash.app.main import open_parser
from tfdash.profiling import diff_cli


def _help(parser, option: str) -> str:
    [action] = [a for a in parser._actions if option in a.option_strings]
    return re.sub(r"\s+", " ", action.help)


def test_the_help_and_the_pickers_tooltip_say_shape_not_model():
    baseline = _help(open_parser(), "--baseline")
    force = _help(diff_cli.parser(), "--force")
    [choose] = [b for b in PICKER if b.id == "picker.choose"]
    assert "same shape and dtype" in baseline and "same model" not in baseline, baseline
    assert "model shape or dtype differ" in force and "different models" not in force, force
    assert "another shape or dtype" in choose.tooltip and "another model" not in choose.tooltip, choose.tooltip
