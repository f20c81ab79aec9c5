-- Whether the capture recorded input shapes (profile(record_shapes=True)): ATen ops then carry an
-- `Input Dims` arg. One row; read by kineto_sql/diff_verdict.py (a setting that changes host cost).
SELECT EXISTS (SELECT 1 FROM args WHERE key GLOB 'args.Input Dims*') AS record_shapes
