-- id: fleet.rank_lateness
-- version: 2
-- kind: fleet
-- title: Per rank: how often it arrived last at a collective, the others' wait it caused, its mean lateness (aligned clocks)
-- reads: collectives, fleet_clock_offsets, fleet_collective_skew
-- why: a straggler shows in the collectives as the rank that arrives last, call after call; the wait it
--   causes is the early ranks' wait of the calls it closed. Lateness is a rank's start behind the first
--   rank of each call, on the aligned clocks (fleet.clock_offsets), averaged over the calls it took part in:
--   a rank late on average is late before every collective (compute, data, host), not in one unlucky call.
--   Only calls with a measured skew count (one call on every rank, clocks aligned); late_beyond_band counts
--   the calls it closed with a start skew wider than the clock band, the only ones that say it was late.
CREATE OR REPLACE TABLE fleet_rank_lateness AS
WITH calls AS (
  SELECT c.rank, c.start_ns - o.applied_offset_ns AS t0, k.*,
         min(c.start_ns - o.applied_offset_ns) OVER (PARTITION BY c.step, coalesce(c.pg, ''), c.collective, c.seq)
           AS first_t0
  FROM collectives c
  JOIN fleet_clock_offsets o USING (rank)
  JOIN fleet_collective_skew k
    ON k.step IS NOT DISTINCT FROM c.step AND k.pg = coalesce(c.pg, '') AND k.collective = c.collective
       AND k.seq = c.seq
  WHERE k.start_skew_us IS NOT NULL
)
SELECT rank, count(*) AS calls,
       count(*) FILTER (WHERE last_rank = rank) AS arrived_last,
       count(*) FILTER (WHERE last_rank = rank AND start_skew_us > band_us) AS late_beyond_band,
       coalesce(sum(wait_us) FILTER (WHERE last_rank = rank), 0.0) AS wait_caused_us,
       avg(t0 - first_t0) / 1e3 AS mean_lateness_us
FROM calls
GROUP BY rank
ORDER BY rank;
