-- The engine's tables as bench/engine_digest.py digests them, one SELECT each, split on `-- section:`.
-- Rows name their thread/process by (pid, tid, name), never by the engine's internal ids, so two loads
-- compare equal when the engine holds the same data, whatever order it numbered things in.

-- section: slice
SELECT s.name, s.category, s.ts, s.dur, s.depth,
       t.tid, coalesce(t.upid, pt.upid) AS upid_key, p.pid, t.name AS thread_name, tr.name AS track_name,
       s.arg_set_id
FROM slice s
JOIN track tr ON tr.id = s.track_id
LEFT JOIN thread_track tt ON tt.id = s.track_id
LEFT JOIN thread t ON t.utid = tt.utid
LEFT JOIN process_track pt ON pt.id = s.track_id
LEFT JOIN process p ON p.upid = coalesce(t.upid, pt.upid);

-- section: args
SELECT arg_set_id, key, display_value, value_type FROM args;

-- section: flow
SELECT so.name AS out_name, so.ts AS out_ts, tout.tid AS out_tid, pout.pid AS out_pid,
       si.name AS in_name, si.ts AS in_ts, tin.tid AS in_tid, pin.pid AS in_pid, f.arg_set_id
FROM flow f
JOIN slice so ON so.id = f.slice_out
JOIN slice si ON si.id = f.slice_in
LEFT JOIN thread_track ttout ON ttout.id = so.track_id
LEFT JOIN thread tout ON tout.utid = ttout.utid
LEFT JOIN process pout ON pout.upid = tout.upid
LEFT JOIN thread_track ttin ON ttin.id = si.track_id
LEFT JOIN thread tin ON tin.utid = ttin.utid
LEFT JOIN process pin ON pin.upid = tin.upid;

-- section: thread
SELECT t.tid, t.name, p.pid, t.is_main_thread FROM thread t LEFT JOIN process p USING (upid);

-- section: process
SELECT pid, name, arg_set_id FROM process;

-- section: counter
SELECT ct.name AS track_name, c.ts, c.value, c.arg_set_id FROM counter c JOIN counter_track ct ON ct.id = c.track_id;

-- section: stats
-- (the engine's own timings, *_duration_ns, differ from run to run)
SELECT name, idx, severity, source, value FROM stats WHERE value != 0 AND name NOT GLOB '*_duration_ns';
