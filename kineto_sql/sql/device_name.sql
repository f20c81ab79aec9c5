-- The device model of a trace: the first non-empty `deviceProperties[].name` (Kineto lists every GPU
-- of the node; a job's GPUs are one model). Empty text when the trace has none.
SELECT coalesce(
  (
    SELECT json_extract(d.value, '$.name')
    FROM kineto_metadata AS m, json_each(m.value) AS d
    WHERE
      m.key = 'deviceProperties'
      AND coalesce(json_extract(d.value, '$.name'), '') != ''
    ORDER BY d.key
    LIMIT 1
  ),
  ''
) AS name
