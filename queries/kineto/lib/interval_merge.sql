-- version: 1
-- locked: 1 6e7fe41391a26592

-- Interval merge, written once: overlapping or touching (ts, dur) intervals of one partition become
-- maximal intervals. One sorted pass (running max of earlier ends, then a running count of the rows that
-- start after it), so the cost is a sort, never a join per row. Perfetto v52's stdlib has interval
-- intersection (intervals.intersect) and overlap counting (intervals.overlap) but no partitioned merge.

-- Merged intervals of `tab`, per value of its column `part` (use a constant for one partition). `tab` must
-- have columns `ts` and `dur` (dur >= 0). Output columns: the partition column, ts, dur, interval_count.
CREATE OR REPLACE PERFETTO MACRO kineto_interval_merge(
  -- Table or subquery with columns `ts`, `dur` and the partition column.
  tab TableOrSubquery,
  -- Partition column: intervals of different values never merge.
  part ColumnName
)
RETURNS TableOrSubquery AS
(
  SELECT
    $part,
    min(ts) AS ts,
    max(end_ts) - min(ts) AS dur,
    count(*) AS interval_count
  FROM (
    SELECT
      *,
      sum(CASE WHEN prev_end_ts IS NULL OR ts > prev_end_ts THEN 1 ELSE 0 END) OVER (
        PARTITION BY $part
        ORDER BY ts, end_ts
        ROWS UNBOUNDED PRECEDING
      ) AS _grp
    FROM (
      SELECT
        $part,
        ts,
        ts + dur AS end_ts,
        max(ts + dur) OVER (
          PARTITION BY $part
          ORDER BY ts, ts + dur
          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
        ) AS prev_end_ts
      FROM $tab
    )
  )
  GROUP BY $part, _grp
);
