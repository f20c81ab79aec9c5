-- id: reading.op_table
-- version: 6
-- kind: reading
-- title: Op table: torch's key_averages() per op name, sorted by self device time then self CPU
-- references: "torch.profiler & HTA: the Framework View", Reading order, step 2; "Profiling in PyTorch: A
--   Beginner's Guide to torch.profiler", "Overhead-Bound vs. Compute-Bound"
-- needs: cpu_ops
-- status: stable
-- default top_n: 0

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.host_tree;
INCLUDE PERFETTO MODULE kineto.lib.launches;

-- Every host-side event key_averages() counts: ops and annotations, python frames and runtime calls,
-- in torch's per-thread tree (kineto.lib.host_tree). As torch's EventList._remove_dup_nodes does, an
-- event that is the only child of a parent with the same name (aten::div_ redispatching to aten::div_)
-- is folded into that parent: it is not a call of its own, and its self time goes to the parent.
-- ProfilerStep#N are renamed ProfilerStep*, as torch does.
-- The folded events (few): the only child of a same-name parent in torch's tree. Found in one pass
-- over the host events; only these are materialized.
CREATE OR REPLACE PERFETTO TABLE _kineto_reading_op_table_folded(
  -- Slice id.
  id LONG,
  -- Slice name.
  name STRING,
  -- Slice category.
  category STRING,
  -- Duration.
  dur DURATION,
  -- Self time.
  self_dur DURATION
) AS
SELECT
  h.id,
  s.name,
  s.category,
  h.dur,
  h.self_dur
FROM kineto_host_tree AS h
-- Only children of a one-child parent are looked up in the slice table (a third of the events): the
-- parents are taken as one set, not joined per event.
CROSS JOIN slice AS ps
  ON ps.id = h.parent_id
CROSS JOIN slice AS s
  ON s.id = h.id
WHERE
  h.parent_id IN (SELECT id FROM kineto_host_tree WHERE child_count = 1)
  AND ps.name = s.name
ORDER BY h.id;

-- The fold lookups and the launches join it by id.
CREATE OR REPLACE PERFETTO INDEX _kineto_reading_op_table_folded_id ON _kineto_reading_op_table_folded(id);

-- The event each folded op is folded into: the nearest ancestor of the same name that is itself kept
-- (NULL when no ancestor on its track is: the op then counts as itself).
CREATE OR REPLACE PERFETTO TABLE _kineto_reading_op_table_kept(
  -- Slice id of a folded event.
  id LONG,
  -- The event it counts as.
  kept_id LONG,
  -- Its self time.
  self_dur DURATION
) AS
SELECT
  f.id,
  (
    SELECT a.id
    FROM ancestor_slice(f.id) AS a
    JOIN kineto_host_tree AS na
      ON na.id = a.id
    WHERE
      a.name = f.name
      AND a.id NOT IN (SELECT id FROM _kineto_reading_op_table_folded)
    ORDER BY a.depth DESC
    LIMIT 1
  ) AS kept_id,
  f.self_dur
FROM _kineto_reading_op_table_folded AS f
ORDER BY f.id;

-- Joined by id below (perfetto's SQLite builds no automatic indexes).
CREATE OR REPLACE PERFETTO INDEX _kineto_reading_op_table_kept_id ON _kineto_reading_op_table_kept(id);

-- Device time per launching op: the kernels, memcpys and memsets whose runtime call (same
-- correlation id) sits directly under the op. That is the op's self device time; its device total adds
-- what its descendants launched, so each device activity is credited to the launching op and every op
-- above it.
CREATE OR REPLACE PERFETTO TABLE _kineto_reading_op_table_device(
  -- Slice id of an op.
  op_id LONG,
  -- Device time the op launched itself.
  self_device_dur DURATION,
  -- Device time the op and its descendants launched.
  device_dur DURATION
) AS
WITH
  direct AS (
    SELECT
      coalesce(k.kept_id, l.op_id) AS op_id,
      sum(l.gpu_dur) AS dur
    FROM kineto_launches AS l
    LEFT JOIN _kineto_reading_op_table_kept AS k
      ON k.id = l.op_id
    WHERE
      l.op_id IS NOT NULL
      AND l.gpu_dur IS NOT NULL
    GROUP BY 1
  ),
  credited AS (
    SELECT
      d.op_id,
      d.dur AS self_dur,
      d.dur AS dur
    FROM direct AS d
    UNION ALL
    SELECT
      a.id AS op_id,
      0 AS self_dur,
      d.dur AS dur
    FROM direct AS d
    JOIN ancestor_slice(d.op_id) AS a
  )
SELECT
  op_id,
  sum(self_dur) AS self_device_dur,
  sum(dur) AS device_dur
FROM credited
GROUP BY op_id
ORDER BY op_id;

-- Joined by op id below.
CREATE OR REPLACE PERFETTO INDEX _kineto_reading_op_table_device_id ON _kineto_reading_op_table_device(op_id);

-- One row per key: calls, self and total CPU time (self time of folded same-name only children
-- added), self and total device time of the events that are not folded. Every host event is counted
-- in one scan grouped by (name, category), driven by the slice table so that the engine orders it;
-- the few folded events are then taken out of their groups and their self time given to the key.
CREATE OR REPLACE PERFETTO TABLE _kineto_reading_op_table_per_name(
  -- Row key: the name, ProfilerStep#N as ProfilerStep*.
  name STRING,
  -- op, annotation, python or runtime.
  kind STRING,
  -- Number of calls.
  calls LONG,
  -- Sum of self CPU time.
  self_cpu_dur DURATION,
  -- Sum of CPU time.
  cpu_dur DURATION,
  -- Self device time.
  self_device_dur DURATION,
  -- Device total.
  device_dur DURATION
) AS
WITH
  every AS (
    SELECT
      s.name,
      s.category,
      count(*) AS calls,
      sum(h.dur) AS dur,
      sum(h.self_dur) AS self_dur,
      sum(d.self_device_dur) AS self_device_dur,
      sum(d.device_dur) AS device_dur
    FROM slice AS s
    CROSS JOIN kineto_host_tree AS h
      USING (id)
    LEFT JOIN _kineto_reading_op_table_device AS d
      ON d.op_id = s.id
    GROUP BY s.name, s.category
  ),
  folded AS (
    SELECT
      f.name,
      f.category,
      count(*) AS calls,
      sum(f.dur) AS dur,
      sum(f.self_dur) AS self_dur,
      sum(d.self_device_dur) AS self_device_dur,
      sum(d.device_dur) AS device_dur,
      -- Self time credited to the kept same-name ancestor (same key).
      sum(IIF(k.kept_id IS NOT NULL, f.self_dur, 0)) AS moved_self_dur
    FROM _kineto_reading_op_table_folded AS f
    JOIN _kineto_reading_op_table_kept AS k
      USING (id)
    LEFT JOIN _kineto_reading_op_table_device AS d
      ON d.op_id = f.id
    GROUP BY f.name, f.category
  ),
  kept AS (
    SELECT
      CASE WHEN e.name GLOB 'ProfilerStep#[0-9]*' THEN 'ProfilerStep*' ELSE e.name END AS key,
      CASE
        WHEN c.event_class = 'cpu_op'
          AND (c.is_annotation OR e.name GLOB 'ProfilerStep#[0-9]*') THEN 'annotation'
        WHEN c.event_class = 'cpu_op' THEN 'op'
        ELSE c.event_class
      END AS kind,
      e.calls - coalesce(f.calls, 0) AS calls,
      e.dur - coalesce(f.dur, 0) AS dur,
      e.self_dur - coalesce(f.self_dur, 0) + coalesce(f.moved_self_dur, 0) AS self_dur,
      coalesce(e.self_device_dur, 0) - coalesce(f.self_device_dur, 0) AS self_device_dur,
      coalesce(e.device_dur, 0) - coalesce(f.device_dur, 0) AS device_dur
    FROM every AS e
    JOIN kineto_event_categories AS c
      ON c.category = e.category
    LEFT JOIN folded AS f
      ON f.name = e.name
      AND f.category = e.category
  )
SELECT
  key AS name,
  min(IIF(calls > 0, kind, NULL)) AS kind,
  sum(calls) AS calls,
  sum(self_dur) AS self_cpu_dur,
  sum(dur) AS cpu_dur,
  sum(self_device_dur) AS self_device_dur,
  sum(device_dur) AS device_dur
FROM kept
GROUP BY key
HAVING
  sum(calls) > 0;

-- One row per op name, as prof.key_averages().table(sort_by="self_cuda_time_total"): calls, self and
-- total CPU time, self and total device time, and the self shares. Sorted by self device time, then
-- self CPU time.
CREATE OR REPLACE PERFETTO FUNCTION kineto_reading_op_table(
  -- Keep only the first N rows (0 keeps all)
  top_n LONG
)
RETURNS TABLE(
  -- Op name (key_averages key); ProfilerStep#N are grouped as ProfilerStep*.
  name STRING,
  -- op, annotation, python or runtime.
  kind STRING,
  -- Number of calls.
  calls LONG,
  -- Sum of self CPU time.
  self_cpu_dur DURATION,
  -- self_cpu_dur as % of all self CPU time.
  self_cpu_pct DOUBLE,
  -- Sum of CPU time including children (CPU total).
  cpu_dur DURATION,
  -- Device time of the kernels the op launched itself.
  self_device_dur DURATION,
  -- self_device_dur as % of all device time.
  self_device_pct DOUBLE,
  -- Device time launched by the op and its descendants (device total).
  device_dur DURATION,
  -- cpu_dur / calls.
  avg_cpu_dur DURATION
) AS
WITH
  per_name AS (
    SELECT * FROM _kineto_reading_op_table_per_name
  ),
  totals AS (
    SELECT
      (SELECT sum(self_cpu_dur) FROM _kineto_reading_op_table_per_name) AS all_self_cpu,
      (SELECT sum(dur) FROM kineto_kernels) AS all_device
  ),
  ranked AS (
    SELECT
      p.*,
      row_number() OVER (ORDER BY p.self_device_dur DESC, p.self_cpu_dur DESC, p.name) AS rank
    FROM per_name AS p
  )
SELECT
  r.name,
  r.kind,
  r.calls,
  r.self_cpu_dur,
  100.0 * r.self_cpu_dur / nullif(t.all_self_cpu, 0) AS self_cpu_pct,
  r.cpu_dur,
  r.self_device_dur,
  100.0 * r.self_device_dur / nullif(t.all_device, 0) AS self_device_pct,
  r.device_dur,
  r.cpu_dur / r.calls AS avg_cpu_dur
FROM ranked AS r
CROSS JOIN totals AS t
WHERE
  $top_n <= 0
  OR r.rank <= $top_n
ORDER BY r.rank;
