-- Run before gold.hot_pages (hot.go): the newest committed silver event
-- time (hot_as_of, the windows' end), per window the edits of its
-- getvariable('top_n')-th busiest page (hot_cut), and the pages at or above
-- the cut in either window (hot_candidates, at most
-- getvariable('hot_max_candidates') + 1 of them). Ranking is by edits
-- first, so a page with fewer edits than the cut is beaten by at least
-- top_n pages and cannot be among the window's top: hot_pages then groups
-- per (page, editor), to count editors, only the candidates' edits (a few
-- thousand of a day's 580,000 pages).
SET VARIABLE hot_as_of = (SELECT max(event_time) FROM silver.edits_recent);
SET VARIABLE hot_cut = (
    SELECT {'day':  coalesce(list_min(max(d, getvariable('top_n'))), 1),
            'hour': coalesce(list_min(max(h, getvariable('top_n')) FILTER (WHERE h > 0)), 1)}
    FROM (
        SELECT count(*) AS d,
               count(*) FILTER (WHERE event_time > getvariable('hot_as_of') - INTERVAL 1 HOUR) AS h
        FROM silver.edits_recent
        WHERE event_time > getvariable('hot_as_of') - INTERVAL 1 DAY AND event_time <= getvariable('hot_as_of')
        GROUP BY wiki, title
    )
);
CREATE OR REPLACE TEMP TABLE hot_candidates AS
    SELECT wiki, title
    FROM silver.edits_recent
    WHERE event_time > getvariable('hot_as_of') - INTERVAL 1 DAY AND event_time <= getvariable('hot_as_of')
    GROUP BY wiki, title
    HAVING count(*) >= getvariable('hot_cut').day
        OR count(*) FILTER (WHERE event_time > getvariable('hot_as_of') - INTERVAL 1 HOUR) >= getvariable('hot_cut').hour
    LIMIT getvariable('hot_max_candidates') + 1;
