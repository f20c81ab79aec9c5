-- id: fleet.empty_collectives
-- version: 1
-- kind: fleet
-- title: An empty collectives table, when the tasks did not compute that part
-- reads: nothing
-- why: the clock offsets and the step-start lag read collectives; without that part there are no calls,
--   every offset is 0 and every rank says why (no synchronizing collective matched).
CREATE TABLE collectives (rank BIGINT, step BIGINT, pg VARCHAR, collective VARCHAR, seq BIGINT, ts BIGINT,
                          dur BIGINT, start_ns BIGINT, in_bytes BIGINT, out_bytes BIGINT, group_size BIGINT,
                          in_split VARCHAR, link_gbps DOUBLE);
