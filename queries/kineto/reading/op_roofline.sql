-- id: reading.op_roofline
-- version: 2
-- kind: reading
-- title: Op roofline: achieved TFLOP/s and TB/s per op and shape, arithmetic intensity, bound and % of peak
-- references: Williams, Waterman, Patterson, "Roofline" (CACM 2009); TraceLens performance model
--   (https://github.com/AMD-AGI/TraceLens)
-- needs: cpu_ops, gpu
-- status: stable
-- default device_name: ''

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

INCLUDE PERFETTO MODULE kineto.lib.op_roofline;

-- One row per (op, shape, precision), largest device time first.
CREATE OR REPLACE PERFETTO FUNCTION kineto_reading_op_roofline(
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
  -- compute or memory (intensity above / below the ridge peak_tflops / peak_tbps).
  bound STRING,
  -- Achieved FLOP/s as % of peak_tflops.
  pct_of_peak_flops DOUBLE,
  -- Achieved bandwidth as % of peak_tbps.
  pct_of_peak_bw DOUBLE,
  -- Achieved FLOP/s as % of the roof at this intensity: min(peak, intensity x bandwidth).
  pct_of_roof DOUBLE,
  -- Start of the first call.
  ts TIMESTAMP,
  -- First call start to last call end.
  dur DURATION
) AS
SELECT
  name, family, shape, precision, calls, kernels, device_dur, flops_per_call, bytes_per_call,
  achieved_tflops, achieved_tbps, intensity, model, peak_tflops, peak_tbps, bound, pct_of_peak_flops,
  pct_of_peak_bw, pct_of_roof, ts, dur
FROM kineto_op_roofline($device_name);
