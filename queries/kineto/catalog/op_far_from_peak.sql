-- id: catalog.op_far_from_peak
-- version: 3
-- kind: detector
-- title: Big op far from peak: a GEMM, convolution, attention or memory-bound op that takes a large share of the kernel time at a small fraction of its roofline
-- references: Williams, Waterman, Patterson, "Roofline" (CACM 2009); TraceLens performance model
--   (https://github.com/AMD-AGI/TraceLens)
-- what: one op (all its shapes, record_shapes) takes at least min_share_pct of the device's kernel
--   time, its kernels last long enough to be judged (mean per call >= min_call_us), and it runs under
--   max_pct_of_roof of the roof at its arithmetic intensity (kineto.lib.device_specs peaks), weighted by
--   time over its shapes (the time it would take at the roof over the time it took). Attention and softmax
--   are judged against the roof of their class, not the dense-GEMM peak alone: their exponentials at the
--   device's special-function rate bound them too (kineto.lib.op_roofline, bound `exp`).
-- confirming: `kineto-sql run reading.op_roofline TRACE`: the op's FLOPs and bytes per call, achieved TFLOP/s
--   and TB/s, intensity, bound and % of peak; its kernels (names tell the algorithm cuBLAS / cuDNN /
--   MIOpen picked) in reading.op_table; whether the same shape runs faster elsewhere in the trace.
-- use_instead: GEMM / linear: shapes that fill the GPU (batch more tokens or samples per call; M, N, K multiples of
--   64 / 128), bf16 or fp16 instead of fp32 (or torch.backends.cuda.matmul.allow_tf32 = True), fewer and
--   larger matmuls (fuse QKV), torch.compile(mode="max-autotune"). Convolution: channels_last, bf16, a
--   bigger batch, torch.backends.cudnn.benchmark = True (ROCm: MIOPEN_FIND_MODE / tuning database).
--   Attention: SDPA's flash backend (head dim a multiple of 8, no explicit mask where is_causal works).
--   Memory-bound ops: fusion (torch.compile), contiguous inputs, fewer dtype round trips.
-- why: kernel time the op would give back at `target_pct_of_roof` of its roof (what vendor libraries reach
--   on shapes that fill the device): impact_dur = device time x (1 - pct_of_roof / target). It is step time
--   when the GPU is the critical path; on a host-bound step it is an upper bound.
-- known_problems: shapes too small to fill the GPU by design (batch-1 inference decode) have no faster
--   kernel to switch to: the fix is batching, not the op; an unknown device model leaves the rule silent;
--   the FLOP model counts a causal attention's half and a convolution's nominal work, not what a fast
--   algorithm (Winograd, FFT) skips, so such ops can look slower than they are.
-- example: slow_big_gemm_fires
-- needs: cpu_ops, gpu
-- claims: busy.gemm, busy.attention, busy.elementwise, busy.compute_other
-- status: preview
-- default device_name: ''
-- default min_share_pct: 10
-- default min_call_us: 20
-- default max_pct_of_roof: 30
-- default target_pct_of_roof: 60

-- Why these thresholds hold on any trace:
-- - min_share_pct 10: an op under a tenth of the kernel time saves under 5% of it even at twice the speed;
--   the ranking should go to the ops that can move the step.
-- - min_call_us 20: a kernel of a few microseconds spends a large part of its life ramping up and
--   draining (launch, the first and the last wave of blocks), so its rate says little about the op; such
--   ops are a launch / fusion question (catalog.small_op_storm, catalog.kernel_mix), not a roofline one.
-- - max_pct_of_roof 30 and target 60: cuBLAS / cuBLASLt / hipBLASLt GEMMs and cuDNN / MIOpen
--   convolutions reach 60-80% of the dense datasheet peak on shapes that fill the device, and streaming
--   kernels reach 60-90% of HBM bandwidth; an op under 30% of its roof leaves more than half of what a
--   library reaches on the table, which no measurement noise explains.

INCLUDE PERFETTO MODULE kineto.lib.op_roofline;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.kernel_classes;
INCLUDE PERFETTO MODULE kineto.lib.kernel_class_buckets;
INCLUDE PERFETTO MODULE kineto.lib.launches;

-- One row per op (all its shapes: a model runs one op at many shapes) that is big and far from its roof.
CREATE OR REPLACE PERFETTO FUNCTION kineto_catalog_op_far_from_peak(
  -- deviceProperties name of the GPU; empty: kineto-sql fills it from the trace (write it in the Perfetto UI).
  device_name STRING,
  -- The op's device time as % of all non-communication kernel time that makes it big.
  min_share_pct DOUBLE,
  -- Mean device time per call, us, under which the op is not judged (launch-dominated kernels).
  min_call_us DOUBLE,
  -- % of the roof under which the op is far from peak.
  max_pct_of_roof DOUBLE,
  -- % of the roof a library reaches; the impact is the time saved at this rate.
  target_pct_of_roof DOUBLE
)
RETURNS TABLE(
  -- First call start.
  ts TIMESTAMP,
  -- First call start to last call end.
  dur DURATION,
  -- Device time saved at target_pct_of_roof.
  impact_dur DURATION,
  -- NULL: the row covers the whole capture.
  step LONG,
  -- The finding in words, with the numbers.
  evidence STRING,
  -- Op name.
  name STRING,
  -- Its shape with the most device time, in words.
  shape STRING,
  -- Precision(s).
  precision STRING,
  -- Shapes it ran with.
  shapes LONG,
  -- Calls.
  calls LONG,
  -- Summed device time.
  device_dur DURATION,
  -- device_dur as % of the non-communication kernel time.
  share_pct DOUBLE,
  -- Achieved TFLOP/s.
  achieved_tflops DOUBLE,
  -- Achieved TB/s.
  achieved_tbps DOUBLE,
  -- compute or memory, of the largest shape.
  bound STRING,
  -- % of the roof, time-weighted over the shapes: sum of (time at the roof) / sum of time taken.
  pct_of_roof DOUBLE,
  -- Device model matched.
  model STRING,
  -- The ledger bucket its kernels' time is in (their main kernel class, as kineto.lib.ledger buckets it):
  -- the one bucket of the claims line its impact is drawn from, so kernel time another finding claimed
  -- (catalog.kernel_mix's softmax, say) is not counted twice; NULL when no kernel of it is classed.
  claim_bucket STRING
) AS
WITH
  total AS (
    SELECT sum(dur) AS dur FROM kineto_kernels WHERE class != 'communication'
  ),
  shapes AS (
    SELECT
      r.*,
      -- device time the shape would take at its roof
      r.device_dur * r.pct_of_roof / 100.0 AS roof_dur,
      row_number() OVER (PARTITION BY r.name ORDER BY r.device_dur DESC, r.shape) AS rank_in_op
    FROM kineto_op_roofline($device_name) AS r
    WHERE
      r.pct_of_roof IS NOT NULL
  ),
  ops AS (
    SELECT
      name,
      count(*) AS shape_count,
      group_concat(DISTINCT precision) AS precision,
      sum(calls) AS calls,
      sum(device_dur) AS device_dur,
      sum(flops_per_call * calls) AS flops,
      sum(bytes_per_call * calls) AS bytes,
      sum(roof_dur) AS roof_dur,
      min(ts) AS ts,
      max(ts + dur) - min(ts) AS dur,
      max(IIF(rank_in_op = 1, shape, NULL)) AS top_shape,
      max(IIF(rank_in_op = 1, bound, NULL)) AS bound,
      max(IIF(rank_in_op = 1, pct_of_roof, NULL)) AS top_pct,
      max(model) AS model
    FROM shapes
    GROUP BY name
  ),
  -- the main kernel class of each op (by device time of the kernels launched by its calls or by the ops
  -- under them, as kineto.lib.op_roofline counts its device time)
  launched AS (
    SELECT l.op_name AS name, l.gpu_first_id
    FROM kineto_launches AS l
    WHERE
      l.op_name IN (SELECT name FROM ops)
    UNION ALL
    SELECT anc.name, l.gpu_first_id
    FROM kineto_launches AS l
    CROSS JOIN ancestor_slice(l.op_id) AS anc
    WHERE
      l.op_id IS NOT NULL
      AND l.op_name NOT IN (SELECT name FROM ops)
      AND anc.name IN (SELECT name FROM ops)
  ),
  op_class AS (
    SELECT name, class
    FROM (
      SELECT
        x.name,
        k.class,
        row_number() OVER (PARTITION BY x.name ORDER BY sum(k.dur) DESC, k.class) AS rn
      FROM launched AS x
      JOIN kineto_kernel_classes AS k
        ON k.id = x.gpu_first_id
      GROUP BY x.name, k.class
    )
    WHERE
      rn = 1
  ),
  judged AS (
    SELECT
      o.*,
      100.0 * o.device_dur / t.dur AS share_pct,
      -- time-weighted over the shapes: the time at the roof over the time taken
      100.0 * o.roof_dur / o.device_dur AS pct_of_roof,
      o.flops / o.device_dur / 1e3 AS achieved_tflops,
      o.bytes / o.device_dur / 1e3 AS achieved_tbps
    FROM ops AS o, total AS t
    WHERE
      t.dur > 0
      AND o.device_dur > 0
  )
SELECT
  ts,
  dur,
  CAST(device_dur * (1.0 - pct_of_roof / $target_pct_of_roof) AS INT) AS impact_dur,
  NULL AS step,
  printf(
    '%s (%s): %d call%s over %d shape%s, %.1f us on the device (%.0f%% of kernel time), at %.1f%% of the %s roof (time-weighted over its shapes; %.1f TFLOP/s, %.2f TB/s); the largest shape %s runs %s-bound at %.1f%% of its roof',
    name, precision, calls, IIF(calls = 1, '', 's'), shape_count, IIF(shape_count = 1, '', 's'),
    device_dur / 1e3, share_pct, pct_of_roof, model, achieved_tflops, achieved_tbps, top_shape, bound, top_pct
  ) AS evidence,
  name,
  top_shape AS shape,
  precision,
  shape_count AS shapes,
  calls,
  device_dur,
  share_pct,
  achieved_tflops,
  achieved_tbps,
  bound,
  pct_of_roof,
  model,
  -- the ledger's bucket of the class (kineto.lib.kernel_class_buckets); compute classes only
  CASE WHEN b.is_compute THEN b.bucket END AS claim_bucket
FROM judged
LEFT JOIN op_class AS c
  USING (name)
LEFT JOIN kineto_kernel_class_buckets AS b
  ON b.class = c.class
WHERE
  share_pct >= $min_share_pct
  AND device_dur / 1e3 / calls >= $min_call_us
  AND pct_of_roof < $max_pct_of_roof
  AND pct_of_roof < $target_pct_of_roof
ORDER BY impact_dur DESC;
