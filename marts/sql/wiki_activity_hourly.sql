-- gold.wiki_activity_hourly: per wiki and UTC hour, from silver.edits.
-- bytes_added / bytes_removed sum the positive / negative byte deltas.
SELECT
    wiki,
    date_trunc('hour', event_time)                                      AS hour,
    count(*)::BIGINT                                                    AS edits,
    count(*) FILTER (WHERE type = 'new')::BIGINT                        AS new_pages,
    count(*) FILTER (WHERE bot)::BIGINT                                 AS bot_edits,
    count(*) FILTER (WHERE NOT bot)::BIGINT                             AS human_edits,
    count(DISTINCT "user")::BIGINT                                      AS editors,
    coalesce(sum(byte_delta) FILTER (WHERE byte_delta > 0), 0)::BIGINT  AS bytes_added,
    coalesce(-sum(byte_delta) FILTER (WHERE byte_delta < 0), 0)::BIGINT AS bytes_removed
FROM silver.edits
GROUP BY wiki, date_trunc('hour', event_time)
ORDER BY hour, wiki
