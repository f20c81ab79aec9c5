-- Tables the loader adds after ingest: what Perfetto's JSON importer ignores, and what the loader changed.
-- Placeholders (:name) are bound by kineto_sql.sql_literals.bind, the one place values become SQL.

-- Kineto's top-level fields (schemaVersion, distributedInfo, deviceProperties, baseTimeNanoseconds,
-- record_shapes / with_stack / profile_memory, trace_id...) plus the loader's own facts
-- (kineto_sql.source, kineto_sql.rank, kineto_sql.ts_offset_ns), one row per key.
CREATE PERFETTO TABLE kineto_metadata(
  -- Top-level key of the trace file (or kineto_sql.* for the loader's own facts).
  key STRING,
  -- The value: text for strings and numbers, JSON text for objects and arrays.
  value STRING,
  -- JSON type of the value: text, integer, real, true, false, null, object, array.
  type STRING
) AS
SELECT key, CAST(value AS TEXT) AS value, type
FROM json_each(:metadata_json);

-- Every change the loader made to the input before ingest, and why (empty when the file loaded as is).
CREATE PERFETTO TABLE kineto_ingest_report(
  -- Kind of change, e.g. overlap_lane, id_remapped, timestamps_rebased.
  kind STRING,
  -- How many events (or ids) it touched.
  count LONG,
  -- Why it was needed.
  why STRING,
  -- A few examples, JSON array text.
  examples STRING
) AS
SELECT
  json_extract(value, '$.kind') AS kind,
  json_extract(value, '$.count') AS count,
  json_extract(value, '$.why') AS why,
  json_extract(value, '$.examples') AS examples
FROM json_each(:report_json);
