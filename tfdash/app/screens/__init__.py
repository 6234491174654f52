"""The dashboard's screens.

    main.py            the dashboard: top bar, panes, kernel table
    drill.py           one kernel table row opened up: instances, operands, ctx_len sweep, tabs
    drill_code.py      its tilelang source and generated CUDA tabs
    drill_marginal.py  its marginal cost tab (m)
    drill_counters.py  its Nsight Compute counters tab (n)
    timeline.py        the step's launches on a time axis
    help.py            every key
    picker.py          a baseline among recent snapshots
    ab.py              a live A/B of a plan variant
"""
