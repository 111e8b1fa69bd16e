-- gold.hot_pages: the pages with the most edits (then most distinct editors)
-- in the last hour and the last day, at most getvariable('top_n') per window.
-- "Now" is the newest committed silver event time (as_of), not the wall
-- clock, so a replayed or paused stream still has hot pages; a window covers
-- event_time in (window_start, as_of]. silver.edits_recent is the silver
-- files that reach into the last day before the newest edit (scope.go).
WITH ref AS (
    SELECT max(event_time) AS as_of FROM silver.edits_recent
),
windows AS (
    SELECT * FROM (VALUES ('last_hour', INTERVAL 1 HOUR), ('last_day', INTERVAL 1 DAY)) AS w(time_window, span)
),
per_page AS (
    SELECT
        w.time_window,
        r.as_of - w.span                 AS window_start,
        r.as_of,
        e.wiki,
        e.title,
        count(*)::BIGINT                 AS edits,
        count(DISTINCT e."user")::BIGINT AS editors,
        max(e.event_time)                AS last_edit
    FROM silver.edits_recent e, ref r, windows w
    WHERE e.event_time > r.as_of - w.span AND e.event_time <= r.as_of
    GROUP BY 1, 2, 3, 4, 5
),
ranked AS (
    SELECT *,
        row_number() OVER (PARTITION BY time_window
                           ORDER BY edits DESC, editors DESC, wiki, title) AS rank
    FROM per_page
)
SELECT time_window, rank::INTEGER AS rank, wiki, title, edits, editors, last_edit, window_start, as_of
FROM ranked
WHERE rank <= getvariable('top_n')
ORDER BY time_window, rank
