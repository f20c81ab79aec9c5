-- id: fleet.clock_offsets
-- version: 1
-- kind: fleet
-- title: Each rank's clock offset against the lowest rank, from the ends of matched synchronizing collectives, with its band
-- reads: collectives, fleet_call_match
-- why: rank clocks disagree (CUPTI clocks on different hosts by hundreds of microseconds, fleet clocks by
--   milliseconds), and a start skew or a lateness means nothing until they are aligned. A synchronizing
--   collective (all_reduce, all_gather, reduce_scatter, all_to_all, barrier) cannot end on any rank before
--   the last rank has arrived and its data is through, so it ends at the same moment on every rank, up to the
--   kernel's own tail. A rank's end minus the lowest rank's end of the same call is therefore its clock offset
--   plus tail noise; the median over the calls matched `ok` is the offset (whole ns, floored, so a clock moved
--   by a whole number of ns moves the estimate by exactly that much). The band is how far the calls disagree:
--   3 x 1.4826 x the MAD of the per-call differences (three normal standard deviations) with 8 or more calls,
--   else the largest difference from the median, never under the trace's 1 us timestamp resolution on each
--   of the two ends (2 us). With a single call there is no disagreement to measure: the band is that call's
--   shortest duration, the most a kernel's tail can be. The offsets are applied only when every call matched
--   (fleet_clock_check finds no mismatch) and no band is wider than the calls' median duration; otherwise
--   status says why and nothing is shifted. skew_readable: the calls match and the rank has a band, so a skew
--   can be read (claimed only beyond the band).
CREATE OR REPLACE TABLE fleet_clock_estimate AS
WITH ref AS (SELECT min(rank) AS ref FROM collectives),
ok AS (
  SELECT c.rank, m.step, m.pg, m.collective, m.seq, c.start_ns + c.dur AS end_ns, m.latency_ns
  FROM collectives c
  JOIN fleet_call_match m ON m.step IS NOT DISTINCT FROM c.step AND m.pg = coalesce(c.pg, '')
       AND m.collective = c.collective AND m.seq = c.seq
  WHERE m.status = 'ok' AND m.collective IN ('all_reduce', 'all_gather', 'reduce_scatter', 'all_to_all', 'barrier')
),
paired AS (
  SELECT o.rank, o.end_ns - r.end_ns AS diff_ns, o.latency_ns
  FROM ok o JOIN ok r ON r.rank = (SELECT ref FROM ref) AND r.step IS NOT DISTINCT FROM o.step AND r.pg = o.pg
       AND r.collective = o.collective AND r.seq = o.seq
),
est AS (
  SELECT rank, count(*) AS calls, CAST(floor(median(diff_ns)) AS BIGINT) AS offset_ns, min(latency_ns) AS min_latency_ns,
         median(latency_ns) AS median_latency_ns
  FROM paired GROUP BY rank
),
spread AS (
  SELECT p.rank, median(abs(p.diff_ns - e.offset_ns)) AS mad_ns, max(abs(p.diff_ns - e.offset_ns)) AS max_resid_ns
  FROM paired p JOIN est e USING (rank) GROUP BY p.rank
)
SELECT e.rank, e.calls, e.offset_ns, e.median_latency_ns,
       CASE WHEN e.rank = (SELECT ref FROM ref) THEN 0.0
            WHEN e.calls >= 8 THEN greatest(2000.0, 4.4478 * s.mad_ns)
            WHEN e.calls >= 2 THEN greatest(2000.0, s.max_resid_ns)
            ELSE greatest(2000.0, e.min_latency_ns) END AS band_ns
FROM est e JOIN spread s USING (rank);

-- A call matched `ok` is still two different calls when, on the estimated clocks, one rank's call ended before
-- another's began (a synchronizing collective cannot: nobody finishes before the last rank arrives).
CREATE OR REPLACE TABLE fleet_clock_check AS
SELECT m.step, m.pg, m.collective, m.seq,
       CASE WHEN m.status <> 'ok' THEN m.status
            WHEN m.collective IN ('all_reduce', 'all_gather', 'reduce_scatter', 'all_to_all', 'barrier')
                 AND max(c.start_ns - coalesce(e.offset_ns, 0))
                     > min(c.start_ns + c.dur - coalesce(e.offset_ns, 0)) + 2 * max(coalesce(e.band_ns, 0))
              THEN 'ranks do not overlap in time'
            ELSE 'ok' END AS status
FROM collectives c
JOIN fleet_call_match m ON m.step IS NOT DISTINCT FROM c.step AND m.pg = coalesce(c.pg, '')
     AND m.collective = c.collective AND m.seq IS NOT DISTINCT FROM c.seq
LEFT JOIN fleet_clock_estimate e ON e.rank = c.rank
GROUP BY m.step, m.pg, m.collective, m.seq, m.status;

-- A band wider than the calls' median duration is no kernel tail: the ends were never one moment. With calls
-- that do not match, that is the capture (the pairs are not the same calls); with calls that match, the ends
-- themselves disagree (gloo ops on a busy host end when each rank's thread gets the CPU back, or clocks drift):
-- the estimate is not applied, the raw clocks stand, and the band still bounds every skew claim.
CREATE OR REPLACE TABLE fleet_clock_offsets AS
WITH wide AS (SELECT count(*) AS ranks FROM fleet_clock_estimate WHERE band_ns > greatest(median_latency_ns, 2000)),
mismatched AS (
  SELECT count(*) AS calls, string_agg(DISTINCT status, '; ' ORDER BY status) AS why
  FROM fleet_clock_check WHERE status NOT IN ('ok', 'step not captured on every rank', 'on one rank only')
),
job AS (
  SELECT m.calls > 0 AS mismatched, w.ranks > 0 AS wide,
         concat_ws('; ', CASE WHEN m.calls > 0 THEN m.calls || ' matched call(s) are not one call on every rank ('
                                                    || m.why || ')' END,
                   CASE WHEN w.ranks > 0 THEN 'the ends of the matched calls disagree by more than the calls last' END)
           AS why
  FROM mismatched m CROSS JOIN wide w
),
ranks AS (SELECT DISTINCT rank FROM collectives UNION SELECT DISTINCT rank FROM load)
SELECT r.rank, coalesce(e.calls, 0) AS calls, e.offset_ns / 1e3 AS offset_us, e.band_ns / 1e3 AS band_us,
       NOT j.mismatched AS calls_match,
       NOT j.mismatched AND e.rank IS NOT NULL AS skew_readable,
       CASE WHEN NOT j.mismatched AND NOT j.wide AND e.rank IS NOT NULL THEN e.offset_ns ELSE 0 END AS applied_offset_ns,
       CASE WHEN j.mismatched THEN 'not aligned: ' || j.why || '; a sampled or partial capture?'
            WHEN e.rank IS NULL THEN 'not aligned: no synchronizing collective matched on this rank and the lowest'
            WHEN j.wide THEN 'not aligned: ' || j.why || ' (collectives on a busy host, or drifting clocks); raw '
                             || 'clocks, no skew claimed inside the band'
            WHEN e.offset_ns = 0 AND e.band_ns = 0 THEN 'reference clock'
            ELSE 'aligned on ' || e.calls || ' call(s)' END AS status
FROM ranks r
LEFT JOIN fleet_clock_estimate e USING (rank)
CROSS JOIN job j
ORDER BY r.rank;
