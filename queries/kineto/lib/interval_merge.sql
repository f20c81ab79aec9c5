-- version: 2
-- locked: 2 def853081c7b8c5c

-- Interval merge, written once: overlapping or touching (ts, dur) intervals of one partition become
-- maximal intervals. One sorted pass (running max of earlier ends, then a running count of the rows that
-- start after it), so the cost is a sort, never a join per row. Perfetto v52's stdlib has interval
-- intersection (intervals.intersect) and overlap counting (intervals.overlap) but no partitioned merge.

-- One column name of a partition list, as itself (expanded over the list by __intrinsic_token_apply, as
-- the stdlib's intervals.intersect does).
CREATE OR REPLACE PERFETTO MACRO _kineto_interval_merge_col(
  -- A column name.
  x ColumnName
)
RETURNS Expr AS $x;

-- Each row of `tab` (all its columns) with `merge_group`, the number of the merged interval it falls in
-- within its partition (1, 2, ... in time order), for callers that aggregate more than the interval
-- (e.g. the first step of the merged kernels): GROUP BY the partition columns and merge_group. Also adds
-- `_merge_end_ts` (ts + dur) and `_merge_prev_end_ts` (latest end of the earlier rows of the partition).
CREATE OR REPLACE PERFETTO MACRO _kineto_interval_merge_rows(
  -- Table or subquery with columns `ts`, `dur` and the partition columns.
  tab TableOrSubquery,
  -- Partition columns: intervals of different values never merge.
  parts ColumnNameList
)
RETURNS TableOrSubquery AS
(
  SELECT
    *,
    sum(CASE WHEN _merge_prev_end_ts IS NULL OR ts > _merge_prev_end_ts THEN 1 ELSE 0 END) OVER (
      PARTITION BY __intrinsic_token_apply!(_kineto_interval_merge_col, $parts)
      ORDER BY ts, _merge_end_ts
      ROWS UNBOUNDED PRECEDING
    ) AS merge_group
  FROM (
    SELECT
      *,
      ts + dur AS _merge_end_ts,
      max(ts + dur) OVER (
        PARTITION BY __intrinsic_token_apply!(_kineto_interval_merge_col, $parts)
        ORDER BY ts, ts + dur
        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
      ) AS _merge_prev_end_ts
    FROM $tab
  )
);

-- Merged intervals of `tab`, per value of its partition columns `parts`, a parenthesised list:
-- `(device, stream)`, `(upid)`; for one partition give a constant column (`(SELECT 0 AS k, ts, dur ...)`,
-- `(k)`). `tab` must have columns `ts` and `dur` (dur >= 0). An interval that starts exactly where the
-- merged interval so far ends joins it. Output columns: the partition columns, ts, dur, interval_count.
CREATE OR REPLACE PERFETTO MACRO kineto_interval_merge(
  -- Table or subquery with columns `ts`, `dur` and the partition columns.
  tab TableOrSubquery,
  -- Partition columns: intervals of different values never merge.
  parts ColumnNameList
)
RETURNS TableOrSubquery AS
(
  SELECT
    __intrinsic_token_apply!(_kineto_interval_merge_col, $parts),
    min(ts) AS ts,
    max(_merge_end_ts) - min(ts) AS dur,
    count(*) AS interval_count
  FROM _kineto_interval_merge_rows!($tab, $parts)
  GROUP BY __intrinsic_token_apply!(_kineto_interval_merge_col, $parts), merge_group
);
