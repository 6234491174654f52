"""Profiling, laid out along the data flow: predict and measure -> session -> snapshot -> out.

    predict    analyze.py        what each launch must read, write and compute; its ideal time
               targets.py        the roofline targets (datasheet H200, or a measured ceiling)
    measure    probe.py          the measured copy bandwidth: the ceiling predictions are priced on
               timeline.py       profile windows: per-launch time over N steps of a live generation
               kernel_map.py     which device kernels each launch makes; CUPTI events -> launches
               continuous/       every step's kernels from CUPTI activity records (a C ring)
               cupti_ring.py     that ring (cupti_ring.c, built by cupti_build.py) read as columns
               counters.py       Nsight Compute's counters per launch (`tfdash counters`, ncu.py);
                                 counters_child.py the process ncu profiles (one graph replay)
               marginal.py       a launch doubled in a variant graph, A/B against the plain step
               ab.py             a plan variant A/B'd live: the two plans take turns on one generation
                                 (variants.py the variants, by the names bench and the A/B show;
                                 ab_result.py the turns' numbers as the result: sides, verdict, ops)
               nvml.py           NVML queries (errors are a sentinel); nvml_sampler.py its thread
    session    session.py        one observed generation: threads, locks, requests
               session_parts.py  its set-up (NVML sampler, probe, capture) and decode-thread side (TokenFeed)
               session_ab.py     Session.ab: a variant built beside the running plan, then ab.py
               session_requests.py  its requests: a window now or next, a marginal, queued or run
               session_timing.py    continuous timing started and stopped around its generation
               messages.py       what a Session posts while it runs
               pricing.py        the predictions it caches per ctx_len
               assemble.py       its state -> a ProfileSnapshot (pure functions)
               meta.py           the run's metadata (host, versions, the plan's build options)
    snapshot   snapshot.py       ProfileSnapshot: everything on screen, frozen and versioned
               export.py         its JSON (with a validating loader), Chrome trace and CSV
                                 (chrome_trace.py, csv_export.py; export_files.py names the files)
               diff.py           two snapshots compared launch by launch (`tfdash diff`, the baseline)
               files.py          atomic writes (a long file streamed into place)
    commands   headless.py       `tfdash --headless`; analyze_cli.py `tfdash analyze`;
               sweep_run.py      `analyze --sweep`: rows and JSON points written as priced, its progress
               bench.py          `tfdash bench` (bench_args.py its command line, bench_table.py its
                                 report, hf_peer.py its hf-compile peer); overhead.py what
                                 profiling windows cost
               diff_cli.py       `tfdash diff`; counters_cli.py `tfdash counters`
               ab_table.py       an A/B's result as text (headless, open's summary)

The runtime owns the step's state and its graphs (tfdash.engine.runtime): measuring code asks it
to hold and restore pos/tok or to capture a variant, and never writes its buffers itself.
"""
