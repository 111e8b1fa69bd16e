-- @model gold.top_editors_daily
-- @unit day(day)
-- @key day, wiki, rank
-- gold.top_editors_daily: per UTC day and wiki, the top editors by edits
-- (ties broken by bytes changed, then name), at most getvariable('top_n').
-- bytes_changed is the sum of absolute byte deltas. utc_day is the UTC
-- date without a per-row time zone conversion (duck.go).
WITH per_editor AS (
    SELECT
        utc_day(event_time)                          AS day,
        wiki,
        "user",
        bool_or(bot)                                 AS bot,
        count(*)::BIGINT                             AS edits,
        coalesce(sum(abs(byte_delta)), 0)::BIGINT    AS bytes_changed
    FROM silver.edits
    GROUP BY 1, 2, 3
),
ranked AS (
    SELECT *,
        row_number() OVER (PARTITION BY day, wiki
                           ORDER BY edits DESC, bytes_changed DESC, "user") AS rank
    FROM per_editor
)
SELECT day, wiki, rank::INTEGER AS rank, "user", bot, edits, bytes_changed
FROM ranked
WHERE rank <= getvariable('top_n')
ORDER BY day, wiki, rank
