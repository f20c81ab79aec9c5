-- id: fleet.shape_balance
-- version: 1
-- kind: fleet
-- title: Per rank: how far its work per step (ops by input shapes, reading.op_shapes) is from the typical rank's
-- reads: op_shapes
-- why: ranks of a data-parallel job run the same ops on the same input shapes every step. A straggler that
--   does the same work as the others is slow for a reason outside the model (a slower or busier GPU or host:
--   machine noise); one that runs more ops, or the same ops on larger inputs, was given more work (data
--   imbalance: variable sequence length, uneven sharding). Per (op, input shapes) the typical rank's calls per
--   step is the median across ranks (a rank without that row has 0); work_diff_pct is a rank's summed absolute
--   difference from it, as % of the typical rank's calls per step. At 5% or more (work_differs) the rank's
--   work is not the others': dlrm's ranks differ by under 3% (a few data-dependent embedding shapes), a rank
--   given 6x the matmuls by 230%. shapes_recorded: record_shapes was on (else only op counts compare).
CREATE OR REPLACE TABLE fleet_shape_balance AS
WITH s AS (SELECT rank, name, coalesce(input_dims, '') AS dims, calls_per_step FROM op_shapes),
ranks AS (SELECT rank, bool_or(input_dims IS NOT NULL) AS shapes_recorded FROM op_shapes GROUP BY rank),
keys AS (SELECT DISTINCT name, dims FROM s),
grid AS (
  SELECT r.rank, k.name, k.dims, coalesce(s.calls_per_step, 0.0) AS cps
  FROM ranks r CROSS JOIN keys k LEFT JOIN s ON s.rank = r.rank AND s.name = k.name AND s.dims = k.dims
),
typical AS (SELECT name, dims, median(cps) AS med FROM grid GROUP BY name, dims),
diff AS (
  SELECT g.rank, 100.0 * sum(abs(g.cps - t.med)) / NULLIF(sum(t.med), 0) AS work_diff_pct
  FROM grid g JOIN typical t USING (name, dims) GROUP BY g.rank
)
SELECT r.rank, d.work_diff_pct, coalesce(d.work_diff_pct >= 5.0, FALSE) AS work_differs, r.shapes_recorded
FROM ranks r JOIN diff d USING (rank)
ORDER BY r.rank;
