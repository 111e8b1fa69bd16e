-- @model gold.editor_sessions_daily
-- @unit day(day)
-- @key day
-- gold.editor_sessions_daily: per UTC day of session start, from
-- silver.editor_sessions. Session length is session_end - session_start in
-- seconds; the median and p95 are interpolated (quantile_cont).
WITH s AS (
    SELECT *,
        utc_day(session_start)                         AS day,
        epoch(session_end - session_start)             AS length_s
    FROM silver.editor_sessions
)
SELECT
    day,
    count(*)::BIGINT                                        AS sessions,
    count(DISTINCT "user")::BIGINT                          AS editors,
    coalesce(sum(edits), 0)::BIGINT                         AS edits,
    quantile_cont(length_s, 0.5)::DOUBLE                    AS median_session_s,
    quantile_cont(length_s, 0.95)::DOUBLE                   AS p95_session_s,
    avg(edits)::DOUBLE                                      AS edits_per_session,
    count(*) FILTER (WHERE bot)::BIGINT                     AS bot_sessions,
    count(*) FILTER (WHERE NOT bot)::BIGINT                 AS human_sessions,
    coalesce(sum(edits) FILTER (WHERE bot), 0)::BIGINT      AS bot_edits,
    coalesce(sum(edits) FILTER (WHERE NOT bot), 0)::BIGINT  AS human_edits
FROM s
GROUP BY day
ORDER BY day
