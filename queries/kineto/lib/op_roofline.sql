-- version: 4

-- FLOPs and bytes per op come from kineto.lib.op_flops (record_shapes); the innermost op with a model
-- owns the kernels (aten::linear -> aten::addmm), and every device activity launched from it or from
-- its children counts as its device time (communication excluded). Achieved TFLOP/s = FLOPs / device
-- time; TB/s = bytes / device time; arithmetic intensity = FLOPs / byte. The roof at that intensity is
-- min(peak FLOP/s, intensity x HBM bandwidth) (Williams et al.); an op is compute-bound when its
-- intensity is above the ridge point (peak / bandwidth), memory-bound below it, and `pct_of_roof` is
-- its achieved rate as % of that roof: the one number that says how far from the hardware it runs.
-- Peaks (kineto.lib.device_specs): the op's precision picks bf16 / fp16 / fp32 matrix peak for GEMM and
-- attention; fp32 convolutions use TF32 (cuDNN's default allow_tf32); elementwise, norm and reduction
-- ops use the fp32 (vector) peak, which never matters since they sit far left of the ridge.
-- Attention and softmax are judged against the roof of their class, not the dense-GEMM peak alone: the
-- softmax between attention's two matmuls evaluates one exponential per score on the special-function
-- units, which run at a small fraction of the tensor cores' rate (_kineto_device_exp_rates: H100 SXM 3.9 T/s
-- against 989 TFLOP/s), so an attention kernel can go no faster than its exponentials either (the limit
-- FlashAttention-3, section 3.1, works around). The time at the roof is the longest of FLOPs / peak,
-- bytes / bandwidth and exps / exp rate; `bound` is `exp` when the exponentials take longest (a head dim
-- under 64 on Hopper, under 128 on Blackwell).

INCLUDE PERFETTO MODULE kineto.lib.op_flops;
INCLUDE PERFETTO MODULE kineto.lib.launches;
INCLUDE PERFETTO MODULE kineto.lib.kernels;
INCLUDE PERFETTO MODULE kineto.lib.device_specs;
INCLUDE PERFETTO MODULE intervals.intersect;

-- Ops with a model that no op of theirs with a model sits under: the ones that own kernels.
CREATE OR REPLACE PERFETTO TABLE _kineto_op_roofline_owners(
  -- cpu op slice id.
  id LONG,
  -- Op name.
  name STRING,
  -- Family.
  family STRING,
  -- Shape in words.
  shape STRING,
  -- Precision.
  precision STRING,
  -- FLOPs.
  flops DOUBLE,
  -- Bytes.
  bytes DOUBLE,
  -- Exponentials (attention scores, softmax elements).
  exps DOUBLE,
  -- Op start.
  ts LONG,
  -- Op end.
  end_ts LONG
) AS
WITH
  model_ops AS MATERIALIZED (
    SELECT f.id, s.ts, s.dur, s.track_id, s.depth
    FROM kineto_op_flops AS f
    JOIN slice AS s
      USING (id)
  ),
  -- ops with a model under them: on a track slices nest, so an op with a model that starts inside another
  -- one's range, deeper on the same track, is its descendant (one interval intersect, not a walk up every
  -- op's ancestors)
  covered AS (
    SELECT DISTINCT ii.id_1 AS id
    FROM _interval_intersect!(
      (
        (SELECT id, ts, 1 AS dur, track_id FROM model_ops),
        (SELECT id, ts, dur, track_id FROM model_ops WHERE dur > 0)
      ),
      (track_id)
    ) AS ii
    JOIN model_ops AS g
      ON g.id = ii.id_0
    JOIN model_ops AS f
      ON f.id = ii.id_1
    WHERE
      g.depth > f.depth
  )
SELECT f.id, f.name, f.family, f.shape, f.precision, f.flops, f.bytes, f.exps, s.ts, s.ts + s.dur AS end_ts
FROM kineto_op_flops AS f
JOIN slice AS s
  USING (id)
WHERE
  f.id NOT IN (SELECT id FROM covered);

-- Device time of each owning op: its own launches plus those of its descendants.
CREATE OR REPLACE PERFETTO TABLE _kineto_op_roofline_time(
  -- Owning op slice id.
  id LONG,
  -- Summed device time of the activities it launched.
  device_dur LONG,
  -- Number of device activities.
  kernels LONG
) AS
WITH
  work AS (
    SELECT l.op_id, l.correlation, l.gpu_dur, l.gpu_count
    FROM kineto_launches AS l
    WHERE
      l.op_id IS NOT NULL
      AND l.gpu_count > 0
      AND l.gpu_first_id NOT IN (SELECT id FROM kineto_kernels WHERE class = 'communication')
  ),
  direct AS (
    SELECT w.op_id AS id, w.gpu_dur, w.gpu_count
    FROM work AS w
    WHERE
      -- `+`: the list is looked up per row, not handed to the launches table as an IN constraint (which
      -- costs more than linear in the launches: 0.01 -> 0.12 s from owlv2_large to its 4x replica)
      +w.op_id IN (SELECT id FROM _kineto_op_roofline_owners)
  ),
  nested AS (
    SELECT
      w.correlation,
      w.gpu_dur,
      w.gpu_count,
      anc.id,
      row_number() OVER (PARTITION BY w.correlation ORDER BY anc.depth DESC) AS rn
    FROM work AS w
    CROSS JOIN ancestor_slice(w.op_id) AS anc
    WHERE
      w.op_id NOT IN (SELECT id FROM _kineto_op_roofline_owners)
      AND anc.id IN (SELECT id FROM _kineto_op_roofline_owners)
  )
SELECT id, sum(gpu_dur) AS device_dur, sum(gpu_count) AS kernels
FROM (
  SELECT id, gpu_dur, gpu_count FROM direct
  UNION ALL
  SELECT id, gpu_dur, gpu_count FROM nested WHERE rn = 1
)
GROUP BY id;

-- One row per (op, shape, precision), largest device time first: see reading.op_roofline for the
-- definitions (achieved rates, intensity, roof, bound).
CREATE OR REPLACE PERFETTO FUNCTION kineto_op_roofline(
  -- The deviceProperties name of the GPU (e.g. NVIDIA H100 80GB HBM3); empty = kineto-sql reads it from the
  -- trace's deviceProperties (in the Perfetto UI, write it in; unknown models leave the peak columns NULL)
  device_name STRING
)
RETURNS TABLE(
  -- Op name, e.g. aten::addmm.
  name STRING,
  -- gemm, conv, attention, elementwise, norm, reduction.
  family STRING,
  -- Shape in words, e.g. `M=141 N=30522 K=512`.
  shape STRING,
  -- bf16, fp16, fp32...
  precision STRING,
  -- Calls with this shape that ran device work.
  calls LONG,
  -- Device activities they launched.
  kernels LONG,
  -- Summed device time, ns.
  device_dur DURATION,
  -- FLOPs per call.
  flops_per_call DOUBLE,
  -- Bytes per call.
  bytes_per_call DOUBLE,
  -- FLOPs / device time, TFLOP/s.
  achieved_tflops DOUBLE,
  -- Bytes / device time, TB/s.
  achieved_tbps DOUBLE,
  -- FLOPs per byte.
  intensity DOUBLE,
  -- Device model matched in kineto.lib.device_specs, or NULL.
  model STRING,
  -- Peak FLOP/s for this precision and family, TFLOP/s.
  peak_tflops DOUBLE,
  -- Peak memory bandwidth, TB/s.
  peak_tbps DOUBLE,
  -- compute or memory (intensity above / below the ridge peak_tflops / peak_tbps), or exp when the
  -- exponentials at the device's exp rate take longer than both (attention with a small head dim).
  bound STRING,
  -- Achieved FLOP/s as % of peak_tflops.
  pct_of_peak_flops DOUBLE,
  -- Achieved bandwidth as % of peak_tbps.
  pct_of_peak_bw DOUBLE,
  -- Achieved FLOP/s as % of the roof at this intensity: min(peak, intensity x bandwidth); for an op whose
  -- exponentials bound it, the time they take at the exp rate as % of the device time.
  pct_of_roof DOUBLE,
  -- Start of the first call.
  ts TIMESTAMP,
  -- First call start to last call end.
  dur DURATION
) AS
WITH
  spec AS (
    SELECT * FROM _kineto_device_spec_for($device_name)
  ),
  grouped AS (
    SELECT
      o.name,
      o.family,
      o.shape,
      o.precision,
      count(*) AS calls,
      sum(t.kernels) AS kernels,
      sum(t.device_dur) AS device_dur,
      sum(o.flops) AS flops,
      sum(o.bytes) AS bytes,
      sum(o.exps) AS exps,
      min(o.ts) AS ts,
      max(o.end_ts) - min(o.ts) AS dur
    FROM _kineto_op_roofline_owners AS o
    JOIN _kineto_op_roofline_time AS t
      USING (id)
    WHERE
      t.device_dur > 0
    GROUP BY o.name, o.family, o.shape, o.precision
  ),
  rated AS (
    SELECT
      g.*,
      g.flops / g.device_dur / 1e3 AS achieved_tflops,
      g.bytes / g.device_dur / 1e3 AS achieved_tbps,
      IIF(g.bytes > 0, g.flops / g.bytes, NULL) AS intensity,
      s.model,
      CASE
        WHEN g.family IN ('elementwise', 'norm', 'reduction') THEN s.fp32_tflops
        WHEN g.precision = 'bf16' THEN s.bf16_tflops
        WHEN g.precision = 'fp16' THEN s.fp16_tflops
        WHEN g.precision = 'fp32' AND g.family = 'conv' THEN coalesce(s.tf32_tflops, s.fp32_tflops)
        WHEN g.precision = 'fp32' THEN s.fp32_tflops
      END AS peak_tflops,
      s.hbm_tbps AS peak_tbps,
      -- ns the exponentials take at the device's exp rate (NULL: no rate for the model)
      g.exps / x.exp_tops / 1e3 AS exp_dur
    FROM grouped AS g
    LEFT JOIN spec AS s
      ON 1
    LEFT JOIN _kineto_device_exp_rates AS x
      ON x.model = s.model
  ),
  -- the exponentials bound the op when they take longer than its FLOPs at the peak and its bytes at the
  -- bandwidth
  roofed AS (
    SELECT r.*, coalesce(r.exp_dur > max(r.flops / r.peak_tflops, r.bytes / r.peak_tbps) / 1e3, 0) AS exp_bound
    FROM rated AS r
  )
SELECT
  name,
  family,
  shape,
  precision,
  calls,
  kernels,
  device_dur,
  flops / calls AS flops_per_call,
  bytes / calls AS bytes_per_call,
  achieved_tflops,
  achieved_tbps,
  intensity,
  model,
  peak_tflops,
  peak_tbps,
  CASE
    WHEN peak_tflops IS NULL OR peak_tbps IS NULL OR intensity IS NULL THEN NULL
    WHEN exp_bound THEN 'exp'
    WHEN intensity >= peak_tflops / peak_tbps THEN 'compute'
    ELSE 'memory'
  END AS bound,
  100.0 * achieved_tflops / peak_tflops AS pct_of_peak_flops,
  100.0 * achieved_tbps / peak_tbps AS pct_of_peak_bw,
  IIF(
    exp_bound,
    100.0 * exp_dur / device_dur,
    100.0 * achieved_tflops / min(peak_tflops, intensity * peak_tbps)
  ) AS pct_of_roof,
  ts,
  dur
FROM roofed
ORDER BY device_dur DESC, name, shape;
