-- @model gold.wiki_activity_hourly
-- @unit hour(hour)
-- @key wiki, hour
-- gold.wiki_activity_hourly: per wiki and UTC hour, from silver.edits.
-- bytes_added / bytes_removed sum the positive / negative byte deltas.
-- Editors are counted by grouping per editor first rather than with
-- count(DISTINCT): DuckDB's grouping spills to disk past its memory limit,
-- a DISTINCT aggregate holds a set per group in memory (a day of the real
-- stream is about 1.9 million edits). A refresh builds it a few hours at a
-- time (chunks.go): silver.edits is then the edits of those hours.
WITH per_editor AS (
    SELECT
        wiki,
        date_trunc('hour', event_time)                    AS hour,
        "user",
        count(*)                                          AS edits,
        count(*) FILTER (WHERE type = 'new')              AS new_pages,
        count(*) FILTER (WHERE bot)                       AS bot_edits,
        count(*) FILTER (WHERE NOT bot)                   AS human_edits,
        sum(byte_delta) FILTER (WHERE byte_delta > 0)     AS bytes_added,
        sum(byte_delta) FILTER (WHERE byte_delta < 0)     AS bytes_removed
    FROM silver.edits
    GROUP BY 1, 2, 3
)
SELECT
    wiki,
    hour,
    sum(edits)::BIGINT                                    AS edits,
    sum(new_pages)::BIGINT                                AS new_pages,
    sum(bot_edits)::BIGINT                                AS bot_edits,
    sum(human_edits)::BIGINT                              AS human_edits,
    count("user")::BIGINT                                 AS editors,
    coalesce(sum(bytes_added), 0)::BIGINT                 AS bytes_added,
    coalesce(-sum(bytes_removed), 0)::BIGINT              AS bytes_removed
FROM per_editor
GROUP BY wiki, hour
ORDER BY hour, wiki
