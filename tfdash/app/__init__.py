"""The Textual dashboard. It consumes ProfileSnapshots and small coalesced messages; it never
reaches into the engine's buffers.

    app.py           TfdashApp: state, actions, live refresh (<= 20 Hz), exports, quit
    live.py          where snapshots come from: a Session in a thread worker, or a saved file
    main.py          `tfdash` / `tfdash open` entry points and the factories tests use
    screens/         main (the dashboard), drill (one kernel opened up), help (every key)
    widgets/         the panes: continuation, throughput, roofline, NVML, kernel table, charts, code
    model.py         what the panes compute from a snapshot (grouping, sorting, throughput)
    drill_model.py   what the drill-down computes (operands, ctx_len sweep, sources)
    bindings.py      every key, as data with ids (remappable from the config file)
    config.py        ~/.config/tfdash/config.json: theme and keymap
    messages.py      worker -> app messages
"""
