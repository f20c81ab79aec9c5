-- version: 1

-- The busy bucket of the step-time ledger (kineto.lib.ledger) that each device-activity class of
-- kineto.lib.kernel_classes falls in when it runs alone: the one class -> bucket map, read by the ledger's
-- sweep and by rules that name the bucket of an op's kernels (catalog.op_far_from_peak). When several
-- classes run at once the ledger's precedence decides (collectives, then attention, gemm, elementwise,
-- other compute, then memory work); a collective is busy.comm_exposed alone and busy.comm_overlapped
-- under compute.
CREATE OR REPLACE PERFETTO TABLE kineto_kernel_class_buckets(
  -- Class (kineto_kernel_classes.class).
  class STRING,
  -- Ledger bucket of its time when it runs alone.
  bucket STRING,
  -- A compute kernel's work (not a collective, copy-engine transfer or memset).
  is_compute BOOL
) AS
WITH map(class, bucket, is_compute) AS (
  VALUES
    ('communication', 'busy.comm_exposed', 0),
    ('attention', 'busy.attention', 1),
    ('softmax', 'busy.attention', 1),
    ('gemm', 'busy.gemm', 1),
    ('conv', 'busy.gemm', 1),
    ('norm', 'busy.elementwise', 1),
    ('reduction', 'busy.elementwise', 1),
    ('elementwise', 'busy.elementwise', 1),
    ('copy_kernel', 'busy.elementwise', 1),
    ('embedding', 'busy.compute_other', 1),
    ('other', 'busy.compute_other', 1),
    ('memcpy_htod', 'busy.copy_htod', 0),
    ('memcpy_dtoh', 'busy.copy_dtoh', 0),
    ('memcpy_dtod', 'busy.copy_dtod', 0),
    ('memcpy_other', 'busy.copy_other', 0),
    ('memset', 'busy.memset', 0)
)
SELECT class, bucket, is_compute FROM map;
