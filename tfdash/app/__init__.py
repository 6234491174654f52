"""The Textual dashboard. It reads a Source (live or recorded, one protocol) and renders the
ProfileSnapshots it gives; what the app shows, the snapshot holds. It never reaches into the
engine's buffers.

    app.py           TfdashApp: state, themes, config, screens, the palette; its actions mixed in
    refresh.py       the live side: news coalesced into snapshots (<= 20 Hz, within a CPU budget)
    run_actions.py   pause, re-run, profile a window, quit (the engine stopped, --save written)
    live.py          the Source protocol: a Session in a thread worker, or a saved file
    main.py          `tfdash` / `tfdash open` entry points and the factories tests use
    screens/         main (the dashboard), drill (one kernel opened up, its tabs in drill_*.py),
                     timeline, help (every key), picker (a baseline among recent snapshots),
                     ab (a live A/B of a plan variant)
    compare.py       the b and a actions, and the recent snapshot exports the picker lists
    widgets/         the panes: continuation, throughput, roofline, NVML, kernel table (its cells in
                     kernel_cells.py), charts, code, the row lists' Home and End (row_list.py)
    model.py         what the panes compute from a snapshot (grouping, sorting, throughput)
    drill_model.py   what the drill-down computes (the plan rebuilt from the snapshot's options,
                     operands, the ctx_len sweep from its window history, sources)
    cuda_source.py   a launch's generated CUDA, compiled for sm_90a in a child process
    exports.py       snapshot JSON, CSV, Chrome trace and SVG files, named and never overwritten;
                     the export keys
    overhead.py      tok/s with the dashboard against headless, A/B in one process
    bindings.py      every key, as data with ids (remappable from the config file)
    config.py        ~/.config/tfdash/config.json: theme, keymap, export directory
    messages.py      worker -> app messages, and what the screens post (MarginalMeasured, ABMeasured)
"""
