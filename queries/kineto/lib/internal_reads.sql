-- version: 1

-- Composite ATen ops whose CPU kernels read a tensor value into a host scalar (aten::item /
-- aten::_local_scalar_dense) as part of their own computation, where the CUDA / ROCm kernels of the
-- same op do not: the read under them is the op's implementation, not the user's `.item()`, and it is
-- no device sync when the same code runs on a GPU. aten::std / aten::var over a whole tensor on CPU
-- take the mean with `.item()` first (at::native std_var_all_cpu); on a device they run one Welford
-- reduction kernel. Ops whose device kernels also read (nonzero, masked_select, unique,
-- repeat_interleave without output_size, boolean-mask indexing, allclose / equal) are real syncs and are
-- not listed here. A CPU-only capture's host reads under these ops are left out of catalog.sync_forcing_op.

-- One row per composite op that reads internally on CPU only.
CREATE OR REPLACE PERFETTO TABLE kineto_internal_reads(
  -- ATen op name.
  name STRING,
  -- Why its inner read is not a device sync.
  reason STRING
) AS
WITH rows(name, reason) AS (
  VALUES
    ('aten::std', 'std_var_all_cpu reads the mean with item(); the device op is one Welford reduction'),
    ('aten::var', 'std_var_all_cpu reads the mean with item(); the device op is one Welford reduction'),
    ('aten::std_mean', 'std_var_all_cpu reads the mean with item(); the device op is one Welford reduction'),
    ('aten::var_mean', 'std_var_all_cpu reads the mean with item(); the device op is one Welford reduction')
)
SELECT
  name,
  reason
FROM rows;
