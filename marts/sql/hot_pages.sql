-- @model gold.hot_pages
-- @unit table
-- @key time_window, rank
-- gold.hot_pages: the pages with the most edits (then most distinct editors)
-- in the last hour and the last day, at most getvariable('top_n') per window.
-- "Now" is the newest committed silver event time (as_of), not the wall
-- clock, so a replayed or paused stream still has hot pages; a window covers
-- event_time in (window_start, as_of]. silver.edits_recent is the silver
-- files that reach into the last day before the newest edit (scope.go).
--
-- Cost and memory: a day of the real stream is about 1.9 million edits on
-- hundreds of thousands of pages. hot_pages_cut.sql runs first (hot.go):
-- it sets hot_as_of, the windows' end, and finds the pages that can be
-- among a window's top; hot_input is their edits in silver.edits_recent
-- (all of it when there are too many candidates to prune by). Both windows
-- come from one grouping per (page, editor) of hot_input, the last hour's
-- counts as FILTER aggregates of it, with the window bounds computed once
-- in ref. Editors are counted by that grouping, not with count(DISTINCT),
-- which holds a set per page in memory, and each window's top pages come
-- from ORDER BY ... LIMIT (a heap of top_n rows) instead of ranking every
-- page; DuckDB's groupings spill to disk past its memory limit
-- (TestRefreshSpillsUnderMemoryLimit).
WITH ref AS (
    SELECT as_of, as_of - INTERVAL 1 HOUR AS hour_start, as_of - INTERVAL 1 DAY AS day_start
    FROM (SELECT getvariable('hot_as_of') AS as_of)
),
windows AS (
    SELECT * FROM (VALUES ('last_hour', INTERVAL 1 HOUR), ('last_day', INTERVAL 1 DAY)) AS w(time_window, span)
),
per_editor AS (
    SELECT
        e.wiki,
        e.title,
        e."user",
        count(*)                                                    AS day_edits,
        max(e.event_time)                                           AS day_last,
        count(*) FILTER (WHERE e.event_time > r.hour_start)         AS hour_edits,
        max(e.event_time) FILTER (WHERE e.event_time > r.hour_start) AS hour_last
    FROM hot_input e, ref r
    WHERE e.event_time > r.day_start AND e.event_time <= r.as_of
    GROUP BY 1, 2, 3
),
per_page AS (
    SELECT
        wiki,
        title,
        sum(day_edits)::BIGINT                               AS day_edits,
        count(*)::BIGINT                                     AS day_editors,
        max(day_last)                                        AS day_last,
        sum(hour_edits)::BIGINT                              AS hour_edits,
        count(*) FILTER (WHERE hour_edits > 0)::BIGINT       AS hour_editors,
        max(hour_last)                                       AS hour_last
    FROM per_editor
    GROUP BY 1, 2
),
top AS (
    (SELECT 'last_hour' AS time_window, wiki, title,
            hour_edits AS edits, hour_editors AS editors, hour_last AS last_edit
     FROM per_page WHERE hour_edits > 0
     ORDER BY edits DESC, editors DESC, wiki, title LIMIT getvariable('top_n'))
    UNION ALL
    (SELECT 'last_day', wiki, title, day_edits, day_editors, day_last
     FROM per_page
     ORDER BY day_edits DESC, day_editors DESC, wiki, title LIMIT getvariable('top_n'))
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
