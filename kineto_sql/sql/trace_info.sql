-- The sections of `kineto-sql info`, one SELECT each, split on the `-- section:` lines.

-- section: counts
SELECT
  (SELECT count(*) FROM slice) AS slices,
  (SELECT count(*) FROM flow) AS flows,
  (SELECT count(*) FROM process WHERE upid != 0) AS processes,
  (SELECT count(*) FROM thread WHERE utid != 0) AS threads,
  (SELECT count(*) FROM counter) AS counter_values,
  (SELECT count(*) FROM slice WHERE category = 'gpu_user_annotation' OR name GLOB 'ProfilerStep#*') AS step_like_slices;

-- section: processes
SELECT
  p.pid AS pid,
  p.name AS name,
  count(DISTINCT t.utid) AS threads,
  count(s.id) AS slices
FROM process p
LEFT JOIN thread t USING (upid)
LEFT JOIN thread_track tt ON tt.utid = t.utid
LEFT JOIN slice s ON s.track_id = tt.id
WHERE p.upid != 0
GROUP BY p.upid
ORDER BY slices DESC;

-- section: streams
SELECT
  extract_arg(s.arg_set_id, 'args.device') AS device,
  extract_arg(s.arg_set_id, 'args.stream') AS stream,
  count(*) AS activities,
  sum(s.category IN ('kernel', 'Kernel')) AS kernels,
  sum(s.category GLOB '*[mM]emcpy*' OR s.category GLOB '*[mM]emset*') AS memory_ops,
  sum(s.dur) AS busy_ns
FROM slice s
WHERE s.category IN ('kernel', 'Kernel', 'gpu_memcpy', 'gpu_memset', 'Memcpy', 'Memset', 'mtia_ccp_events')
GROUP BY 1, 2
ORDER BY 1, 2;

-- section: steps
SELECT
  s.name AS name,
  s.ts AS ts,
  s.dur AS dur
FROM slice s
JOIN thread_track tt ON s.track_id = tt.id
WHERE s.name GLOB 'ProfilerStep#*'
  AND s.category != 'gpu_user_annotation'
ORDER BY s.ts;

-- section: stats
SELECT name, idx, severity, source, value, description
FROM stats
WHERE value > 0 AND severity IN ('error', 'data_loss')
ORDER BY value DESC;

-- section: trace_bounds
SELECT start_ts, end_ts FROM trace_bounds;

-- section: slice_span
SELECT max(ts + dur) - min(ts) AS span FROM slice WHERE dur >= 0;

-- section: seen
-- The profiler options the trace's own events show, whatever its metadata says (Kineto writes no flags),
-- as kineto.lib.capabilities counts them: record_shapes -> "Input Dims" args, with_stack -> python_function
-- frames, profile_memory -> [memory] events, with_flops -> "flops" args.
INCLUDE PERFETTO MODULE kineto.lib.capabilities;
SELECT
  (SELECT found FROM kineto_capabilities WHERE name = 'shapes') AS record_shapes,
  (SELECT found FROM kineto_capabilities WHERE name = 'stacks') AS with_stack,
  (SELECT found FROM kineto_capabilities WHERE name = 'memory') AS profile_memory,
  (SELECT found FROM kineto_capabilities WHERE name = 'flops') AS with_flops;
