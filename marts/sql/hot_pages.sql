-- gold.hot_pages: the pages with the most edits (then most distinct editors)
-- in the last hour and the last day, at most getvariable('top_n') per window.
-- "Now" is the newest committed silver event time (as_of), not the wall
-- clock, so a replayed or paused stream still has hot pages; a window covers
-- event_time in (window_start, as_of]. silver.edits_recent is the silver
-- files that reach into the last day before the newest edit (scope.go).
--
-- Memory: a day of the real stream has hundreds of thousands of pages.
-- Editors are counted by grouping per (page, editor) first, not with
-- count(DISTINCT), which holds a set per page in memory, and each window's
-- top pages come from ORDER BY ... LIMIT (a heap of top_n rows) instead of
-- ranking every page; DuckDB's groupings spill to disk past its memory
-- limit (TestRefreshSpillsUnderMemoryLimit).
WITH ref AS (
    SELECT max(event_time) AS as_of FROM silver.edits_recent
),
windows AS (
    SELECT * FROM (VALUES ('last_hour', INTERVAL 1 HOUR), ('last_day', INTERVAL 1 DAY)) AS w(time_window, span)
),
per_editor AS (
    SELECT
        w.time_window,
        e.wiki,
        e.title,
        e."user",
        count(*)          AS edits,
        max(e.event_time) AS last_edit
    FROM silver.edits_recent e, ref r, windows w
    WHERE e.event_time > r.as_of - w.span AND e.event_time <= r.as_of
    GROUP BY 1, 2, 3, 4
),
per_page AS (
    SELECT
        time_window,
        wiki,
        title,
        sum(edits)::BIGINT     AS edits,
        count("user")::BIGINT  AS editors,
        max(last_edit)         AS last_edit
    FROM per_editor
    GROUP BY 1, 2, 3
),
top AS (
    (SELECT * FROM per_page WHERE time_window = 'last_hour'
     ORDER BY edits DESC, editors DESC, wiki, title LIMIT getvariable('top_n'))
    UNION ALL
    (SELECT * FROM per_page WHERE time_window = 'last_day'
     ORDER BY edits DESC, editors DESC, wiki, title LIMIT getvariable('top_n'))
)
SELECT
    t.time_window,
    row_number() OVER (PARTITION BY t.time_window
                       ORDER BY t.edits DESC, t.editors DESC, t.wiki, t.title)::INTEGER AS rank,
    t.wiki, t.title, t.edits, t.editors, t.last_edit,
    r.as_of - w.span AS window_start,
    r.as_of
FROM top t
JOIN windows w ON w.time_window = t.time_window, ref r
ORDER BY t.time_window, rank
