-- id: catalog.op_far_from_peak
-- version: 1
-- kind: detector
-- title: Big op far from peak: a GEMM, convolution, attention or memory-bound op that takes a large share of the kernel time at a small fraction of its roofline
-- source: Williams, Waterman, Patterson, "Roofline" (CACM 2009); TraceLens perf model
-- signature: one op (all its shapes, record_shapes) takes at least min_share_pct of the device's kernel
--   time, its kernels last long enough to be judged (mean per call >= min_call_us), and it runs under
--   max_pct_of_roof of the roof at its arithmetic intensity (kineto.lib.device_specs peaks), weighted by
--   time over its shapes (the time it would take at the roof over the time it took).
-- confirming: `kineto-sql run reading.op_roofline TRACE`: the op's FLOPs and bytes per call, achieved TFLOP/s
--   and TB/s, intensity, bound and % of peak; its kernels (names tell the algorithm cuBLAS / cuDNN /
--   MIOpen picked) in reading.op_table; whether the same shape runs faster elsewhere in the trace.
-- fix: GEMM / linear: shapes that fill the GPU (batch more tokens or samples per call; M, N, K multiples of
--   64 / 128), bf16 or fp16 instead of fp32 (or torch.backends.cuda.matmul.allow_tf32 = True), fewer and
--   larger matmuls (fuse QKV), torch.compile(mode="max-autotune"). Convolution: channels_last, bf16, a
--   bigger batch, torch.backends.cudnn.benchmark = True (ROCm: MIOPEN_FIND_MODE / tuning database).
--   Attention: SDPA's flash backend (head dim a multiple of 8, no explicit mask where is_causal works).
--   Memory-bound ops: fusion (torch.compile), contiguous inputs, fewer dtype round trips.
-- cost: kernel time the op would give back at `target_pct_of_roof` of its roof (what vendor libraries reach
--   on shapes that fill the device): impact_dur = device time x (1 - pct_of_roof / target). It is step time
--   when the GPU is the critical path; on a host-bound step it is an upper bound.
-- false_positives: shapes too small to fill the GPU by design (batch-1 inference decode) have no faster
--   kernel to switch to: the fix is batching, not the op; an unknown device model leaves the rule silent;
--   the FLOP model counts a causal attention's half and a convolution's nominal work, not what a fast
--   algorithm (Winograd, FFT) skips, so such ops can look slower than they are.
-- example: slow_big_gemm_fires
-- needs: cpu_ops, gpu
-- status: preview
-- default device_name: ''
-- default min_share_pct: 10
-- default min_call_us: 20
-- default max_pct_of_roof: 30
-- default target_pct_of_roof: 60
-- locked: 1 2bf116ec52dd8412
-- lib: lib.cpu_ops@5 lib.device_specs@1 lib.dtypes@1 lib.event_categories@4 lib.host_slices@8 lib.host_tree@3
--   lib.kernels@6 lib.launches@6 lib.op_flops@3 lib.op_roofline@1 lib.runtime_calls@4 lib.steps@9
--   lib.thread_slices@2 lib.thread_track_slices@1
-- cases: slow_big_gemm_fires=cccace49 fast_gemm_is_silent=f7f71b88 unknown_device_is_silent=93a1ffe1
--   short_kernels_are_not_judged=e4ae847b small_share_is_silent=a8e2b749

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
  model STRING
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
  model
FROM judged
WHERE
  share_pct >= $min_share_pct
  AND device_dur / 1e3 / calls >= $min_call_us
  AND pct_of_roof < $max_pct_of_roof
  AND pct_of_roof < $target_pct_of_roof
ORDER BY impact_dur DESC;
