-- id: reading.op_table
-- version: 4
-- kind: reading
-- title: Op table: torch's key_averages() per op name, sorted by self device time then self CPU
-- source: seed 000 section 2, reading order step 2; seed 001 "Overhead-Bound vs. Compute-Bound"
-- needs: cpu_ops
-- status: stable
-- default top_n: 0
-- locked: 4 bc3f92bdefe45cc4
-- lib: lib.event_categories@2 lib.host_slices@2 lib.host_tree@2 lib.kernels@2 lib.launches@4
--   lib.runtime_calls@3 lib.steps@3

INCLUDE PERFETTO MODULE kineto.lib.event_categories;
INCLUDE PERFETTO MODULE kineto.lib.host_tree;
INCLUDE PERFETTO MODULE kineto.lib.launches;

-- Every host-side event key_averages() counts: ops and annotations, python frames and runtime calls,
-- in torch's per-thread tree (kineto.lib.host_tree). As torch's EventList._remove_dup_nodes does, an
-- event that is the only child of a parent with the same name (aten::div_ redispatching to aten::div_)
-- is folded into that parent: it is not a call of its own, and its self time goes to the parent.
-- ProfilerStep#N are renamed ProfilerStep*, as torch does.
-- Host events with their name and class, and whether torch's key_averages folds each into its parent
-- (an op that is the only child of a same-name parent). Materialized once: the fold lookups below walk
-- ancestors and would otherwise recompute it for every folded event.
CREATE OR REPLACE PERFETTO TABLE _kineto_reading_op_table_named(
  -- Slice id.
  id LONG,
  -- Host-tree parent.
  parent_id LONG,
  -- Duration.
  dur DURATION,
  -- Self time.
  self_dur DURATION,
  -- Slice name.
  name STRING,
  -- Slice category.
  category STRING,
  -- Event class from kineto_event_categories.
  event_class STRING,
  -- True for a record_function / user annotation (kineto_event_categories.is_annotation).
  is_annotation BOOL,
  -- True when folded into its same-name parent.
  folded BOOL
) AS
SELECT
  h.id,
  h.parent_id,
  h.dur,
  h.self_dur,
  s.name,
  s.category,
  c.event_class,
  c.is_annotation,
  coalesce(h.parent_id IS NOT NULL AND ps.name = s.name AND p.child_count = 1, FALSE) AS folded
FROM kineto_host_tree AS h
JOIN slice AS s
  USING (id)
JOIN kineto_event_categories AS c
  ON c.category = s.category
LEFT JOIN kineto_host_tree AS p
  ON p.id = h.parent_id
LEFT JOIN slice AS ps
  ON ps.id = h.parent_id;

-- The fold lookups join this table by id once per ancestor: index it.
CREATE OR REPLACE PERFETTO INDEX _kineto_reading_op_table_named_id ON _kineto_reading_op_table_named(id);

-- The event each folded op is folded into: the nearest ancestor of the same name that is itself kept.
CREATE OR REPLACE PERFETTO TABLE _kineto_reading_op_table_kept(
  -- Slice id.
  id LONG,
  -- The event it counts as (itself when it is kept).
  kept_id LONG
) AS
SELECT
  n.id,
  n.id AS kept_id
FROM _kineto_reading_op_table_named AS n
WHERE
  NOT n.folded
UNION ALL
SELECT
  n.id,
  (
    SELECT a.id
    FROM ancestor_slice(n.id) AS a
    JOIN _kineto_reading_op_table_named AS na
      ON na.id = a.id
    WHERE
      NOT na.folded
      AND na.name = n.name
    ORDER BY a.depth DESC
    LIMIT 1
  ) AS kept_id
FROM _kineto_reading_op_table_named AS n
WHERE
  n.folded;

-- Joined by id below (perfetto's SQLite builds no automatic indexes).
CREATE OR REPLACE PERFETTO INDEX _kineto_reading_op_table_kept_id ON _kineto_reading_op_table_kept(id);

-- Self time of folded events, credited to the event they are folded into.
CREATE OR REPLACE PERFETTO TABLE _kineto_reading_op_table_folded_self(
  -- The kept event.
  kept_id LONG,
  -- Summed self time of the events folded into it.
  self_dur DURATION
) AS
SELECT
  k.kept_id,
  sum(n.self_dur) AS self_dur
FROM _kineto_reading_op_table_named AS n
JOIN _kineto_reading_op_table_kept AS k
  USING (id)
WHERE
  n.folded
GROUP BY k.kept_id;

-- Joined by kept_id below.
CREATE OR REPLACE PERFETTO INDEX _kineto_reading_op_table_folded_self_id
ON _kineto_reading_op_table_folded_self(kept_id);

-- Every host event as one key_averages row candidate: its key, kind, CPU total and self time (with the
-- self time of same-name only children folded in, as torch does), and whether it is itself folded.
CREATE OR REPLACE PERFETTO TABLE _kineto_reading_op_table_events(
  -- Slice id.
  id LONG,
  -- Row key: the name, ProfilerStep#N as ProfilerStep*.
  key STRING,
  -- op, annotation, python or runtime.
  kind STRING,
  -- Duration (CPU total).
  dur DURATION,
  -- Self time, including that of folded same-name only children.
  self_dur DURATION,
  -- The event this one is folded into (itself when it is kept).
  kept_id LONG,
  -- True when folded into its parent (not counted as a call).
  folded BOOL
) AS
SELECT
  n.id,
  CASE WHEN n.name GLOB 'ProfilerStep#[0-9]*' THEN 'ProfilerStep*' ELSE n.name END AS key,
  CASE
    WHEN n.event_class = 'cpu_op'
      AND (n.is_annotation OR n.name GLOB 'ProfilerStep#[0-9]*') THEN 'annotation'
    WHEN n.event_class = 'cpu_op' THEN 'op'
    ELSE n.event_class
  END AS kind,
  n.dur,
  n.self_dur + coalesce(fs.self_dur, 0) AS self_dur,
  coalesce(k.kept_id, n.id) AS kept_id,
  n.folded
FROM _kineto_reading_op_table_named AS n
JOIN _kineto_reading_op_table_kept AS k
  USING (id)
LEFT JOIN _kineto_reading_op_table_folded_self AS fs
  ON fs.kept_id = n.id;

-- Launches join it by op id below: index it.
CREATE OR REPLACE PERFETTO INDEX _kineto_reading_op_table_events_id ON _kineto_reading_op_table_events(id);

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
      coalesce(e.kept_id, l.op_id) AS op_id,
      sum(l.gpu_dur) AS dur
    FROM kineto_launches AS l
    LEFT JOIN _kineto_reading_op_table_events AS e
      ON e.id = l.op_id
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
GROUP BY op_id;

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
    SELECT
      e.key AS name,
      min(e.kind) AS kind,
      count(*) AS calls,
      sum(e.self_dur) AS self_cpu_dur,
      sum(e.dur) AS cpu_dur,
      coalesce(sum(d.self_device_dur), 0) AS self_device_dur,
      coalesce(sum(d.device_dur), 0) AS device_dur
    FROM _kineto_reading_op_table_events AS e
    LEFT JOIN _kineto_reading_op_table_device AS d
      ON d.op_id = e.id
    WHERE
      NOT e.folded
    GROUP BY e.key
  ),
  totals AS (
    SELECT
      (SELECT sum(self_dur) FROM _kineto_reading_op_table_events WHERE NOT folded) AS all_self_cpu,
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
