-- version: 1

-- Element size and precision class of a tensor dtype, under both spellings Kineto writes: the C++ type
-- of record_shapes' `Input type` (c10::BFloat16, float, long int...) and the ScalarType name of
-- record_param_comms / NCCL kernel `dtype` args (BFloat16, Float, Long...).
CREATE OR REPLACE PERFETTO TABLE kineto_dtypes(
  -- Type text as written in the trace.
  type STRING,
  -- Bytes per element.
  bytes LONG,
  -- bf16, fp16, fp32, fp64, fp8, int, bool.
  precision STRING
) AS
WITH t(type, bytes, precision) AS (
  VALUES
    ('c10::BFloat16', 2, 'bf16'),
    ('c10::Half', 2, 'fp16'),
    ('float', 4, 'fp32'),
    ('double', 8, 'fp64'),
    ('c10::Float8_e4m3fn', 1, 'fp8'),
    ('c10::Float8_e5m2', 1, 'fp8'),
    ('c10::Float8_e4m3fnuz', 1, 'fp8'),
    ('c10::Float8_e5m2fnuz', 1, 'fp8'),
    ('c10::complex<float>', 8, 'fp32'),
    ('long int', 8, 'int'),
    ('long', 8, 'int'),
    ('int', 4, 'int'),
    ('short int', 2, 'int'),
    ('signed char', 1, 'int'),
    ('unsigned char', 1, 'int'),
    ('bool', 1, 'bool'),
    ('BFloat16', 2, 'bf16'),
    ('Half', 2, 'fp16'),
    ('Float', 4, 'fp32'),
    ('Double', 8, 'fp64'),
    ('Float8_e4m3fn', 1, 'fp8'),
    ('Float8_e5m2', 1, 'fp8'),
    ('Float8_e4m3fnuz', 1, 'fp8'),
    ('Float8_e5m2fnuz', 1, 'fp8'),
    ('Long', 8, 'int'),
    ('Int', 4, 'int'),
    ('Short', 2, 'int'),
    ('Char', 1, 'int'),
    ('Byte', 1, 'int'),
    ('Bool', 1, 'bool')
)
SELECT type, bytes, precision FROM t;
