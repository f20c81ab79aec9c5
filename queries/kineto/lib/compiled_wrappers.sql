-- version: 1

INCLUDE PERFETTO MODULE kineto.lib.host_slices;

-- The host slices that wrap a compiled region's execution: torch.compile's `Torch-Compiled Region: F/G`
-- range (the frame Dynamo compiled), AOTAutograd's `CompiledFunction` / `CompiledFunctionBackward`
-- (the autograd.Function that runs the compiled forward and backward graphs), Inductor's
-- `## Call CompiledFxGraph <hash> ##` range and the `call` frame of Inductor's generated module
-- (a python_function frame of a file under torchinductor's cache directory). Between the kernels such a
-- wrapper launches, the host runs the wrapper's own Python (guards, argument unpacking, the generated
-- code's launch calls): that time is the cost of issuing the region's kernels, which CUDA graphs
-- (torch.compile mode="reduce-overhead") remove; see the torch.compile docs, "Profiling to understand
-- torch.compile performance".

-- One row per host slice (op, annotation or python frame) that is a compiled-region wrapper.
CREATE OR REPLACE PERFETTO TABLE kineto_compiled_wrappers(
  -- Slice id.
  id JOINID(slice.id),
  -- Slice name.
  name STRING
) AS
SELECT s.id, s.name
FROM kineto_host_slices AS s
WHERE
  s.name GLOB 'Torch-Compiled Region*'
  OR s.name GLOB 'CompiledFunction*'
  OR s.name GLOB '## Call CompiledFxGraph *'
  OR s.name GLOB '*torchinductor*): call'
ORDER BY s.id;
