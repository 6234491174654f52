"""A table with a row cursor (the baseline picker's snapshots, the A/B's variants, the drill-down's
instances, the kernel table): a DataTable whose Home and End go to the first row and the last
(bindings.ROW_LIST), as PageUp and PageDown move by a page. The DataTable's own Home and End scroll
sideways, which moves nothing in a table fitted to its width. Bound on the table rather than as the
screen's priority keys, they act in order with the arrows typed before them.
"""

from __future__ import annotations

from textual.widgets import DataTable

from tfdash.app import bindings


class RowList(DataTable):
    BINDINGS = bindings.ROW_LIST
