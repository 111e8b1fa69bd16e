// The dashboard: polls /api/status every 2 s and draws the observation it
// returns (the `observation` type in the appliance's observe.go). Plain
// JavaScript, no build step, no dependency; every figure from the appliance
// is put into the page as text (wiki page titles and user names come from
// the stream and are never parsed as HTML).
'use strict';

(function () {
  const POLL_MS = 2000;
  const FETCH_TIMEOUT_MS = 5000;
  const SVG = 'http://www.w3.org/2000/svg';

  // ---- DOM helpers ----

  function h(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    setAttrs(e, attrs);
    add(e, kids);
    return e;
  }

  function s(tag, attrs, ...kids) {
    const e = document.createElementNS(SVG, tag);
    setAttrs(e, attrs);
    add(e, kids);
    return e;
  }

  function setAttrs(e, attrs) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') e.setAttribute('class', v);
      else if (k === 'text') e.textContent = v;
      else e.setAttribute(k, String(v));
    }
  }

  function add(e, kids) {
    for (const k of kids.flat(Infinity)) {
      if (k === null || k === undefined || k === false) continue;
      e.append(k instanceof Node ? k : String(k));
    }
  }

  function fill(id, ...kids) {
    const e = document.getElementById(id);
    e.replaceChildren();
    add(e, kids);
    return e;
  }

  // ---- formatting ----

  const nf = new Intl.NumberFormat('en-US');

  function isNum(n) {
    return typeof n === 'number' && Number.isFinite(n);
  }

  function num(n) {
    return isNum(n) ? nf.format(n) : '—';
  }

  function secs(x) {
    if (!isNum(x)) return '—';
    if (x === 0) return '0 s';
    if (x < 0.001) return (x * 1000).toFixed(2) + ' ms';
    if (x < 0.1) return (x * 1000).toFixed(1) + ' ms';
    if (x < 1) return Math.round(x * 1000) + ' ms';
    if (x < 10) return x.toFixed(2) + ' s';
    if (x < 120) return x.toFixed(1) + ' s';
    return span(x);
  }

  // span renders a long duration: "3 min 20 s", "2 h 5 min", "4 d 3 h".
  function span(x) {
    x = Math.round(x);
    if (x < 60) return x + ' s';
    const d = Math.floor(x / 86400), hr = Math.floor((x % 86400) / 3600), m = Math.floor((x % 3600) / 60), sec = x % 60;
    if (d > 0) return d + ' d' + (hr ? ' ' + hr + ' h' : '');
    if (hr > 0) return hr + ' h' + (m ? ' ' + m + ' min' : '');
    return m + ' min' + (sec ? ' ' + sec + ' s' : '');
  }

  // goDur renders a Go duration string ("1h0m0s", "30m0s", "200ms") as
  // span does; anything else is returned as it is.
  function goDur(d) {
    if (typeof d !== 'string') return '—';
    if (d === '0s') return '0 s';
    const re = /(\d+(?:\.\d+)?)(h|ms|m|s|µs|us|ns)/g;
    const scale = { h: 3600, m: 60, s: 1, ms: 1e-3, 'µs': 1e-6, us: 1e-6, ns: 1e-9 };
    let total = 0, used = '', m;
    while ((m = re.exec(d)) !== null) {
      total += parseFloat(m[1]) * scale[m[2]];
      used += m[0];
    }
    if (used !== d) return d;
    return total >= 60 ? span(total) : secs(total);
  }

  function bytes(b) {
    if (!isNum(b)) return '—';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (b >= 1024 && i < units.length - 1) {
      b /= 1024;
      i++;
    }
    return (i === 0 ? b : b.toFixed(b < 10 ? 2 : 1)) + ' ' + units[i];
  }

  // time parses an RFC 3339 time; null for none (Go's zero time included).
  function time(t) {
    if (!t) return null;
    const d = new Date(t);
    if (isNaN(d.getTime()) || d.getUTCFullYear() < 1971) return null;
    return d;
  }

  function clock(d) {
    return d ? d.toISOString().slice(11, 19) + ' UTC' : '—';
  }

  function stamp(d) {
    return d ? d.toISOString().slice(0, 19).replace('T', ' ') + ' UTC' : '';
  }

  // ago is how long before the observation's own time d was (the
  // appliance's clock, so a skewed browser clock does not matter).
  function ago(d, now) {
    if (!d) return '—';
    const x = (now - d) / 1000;
    if (x < 1) return 'just now';
    return span(x) + ' ago';
  }

  function list(x) {
    return Array.isArray(x) ? x : [];
  }

  // ---- what is wrong where ----

  // hopStates says, for each hop of the pipeline, how it is ('ok', 'warn',
  // 'bad' or 'off') and why, from the observation's health reasons, queries,
  // tables and checks.
  function hopStates(o) {
    const st = {};
    for (const k of ['source', 'broker', 'dlq', 'bronze', 'silver', 'sessions', 'gold']) st[k] = { level: 'ok', notes: [] };
    const mark = (k, level, text) => {
      const rank = { ok: 0, off: 0, warn: 1, bad: 2 };
      if (rank[level] > rank[st[k].level] || (level === 'off' && st[k].level === 'ok')) st[k].level = level;
      if (!st[k].notes.some((n) => n.text === text)) st[k].notes.push({ level, text });
    };
    const reasons = list(o.health && o.health.reasons);
    const queries = list(o.queries);
    const tables = list(o.tables);
    const topics = list(o.topics);

    for (const r of reasons) {
      let k = null;
      if (r.startsWith('ingest')) k = 'source';
      else if (r.startsWith('broker')) k = 'broker';
      else if (r.startsWith('catalog')) k = 'bronze';
      else {
        const m = /^query (\w+)/.exec(r);
        if (m && st[m[1]]) k = m[1];
      }
      if (k) mark(k, 'bad', r.replace(/^(query \w+|ingest|broker|catalog):? ?/, ''));
    }
    const quiet = (k) => st[k].level === 'ok';
    if (!o.ingest) mark('source', 'off', 'ingest is off (--no-ingest)');
    else if (!o.ingest.connected && quiet('source')) mark('source', 'warn', 'not connected to the source (reconnecting)');
    if (topics.length === 0 && quiet('broker')) mark('broker', 'bad', 'its topics cannot be read');
    if (o.hops && o.hops.dlq > 0) mark('dlq', 'warn', 'kept here with the reason, not in bronze');

    const hopOfTable = (name) => {
      if (name === 'bronze.recentchange') return 'bronze';
      if (name === 'silver.edits') return 'silver';
      if (name === 'silver.editor_sessions') return 'sessions';
      if (name.startsWith('gold')) return 'gold';
      return null;
    };
    for (const q of queries) {
      const k = hopOfTable({ bronze: 'bronze.recentchange', silver: 'silver.edits', sessions: 'silver.editor_sessions' }[q.name] || '');
      if (!k) continue;
      if (q.error) mark(k, 'bad', q.error);
      else if (q.lag > 0) mark(k, 'ok', num(q.lag) + ' waiting');
    }
    for (const t of tables) {
      const k = hopOfTable(t.name || '');
      if (k && t.error) mark(k, 'bad', t.name + ': ' + t.error);
    }
    for (const c of list(o.refresh && o.refresh.checks)) {
      const k = hopOfTable(c.Asset || '');
      if (k && !c.Passed) mark(k, 'bad', 'check ' + c.Name + ' failed');
    }
    // What a newcomer needs to read the counts: where the differences went.
    const ing = o.ingest;
    if (ing && ing.seen > ing.appended) {
      const parts = [];
      if (ing.dead_lettered) parts.push(num(ing.dead_lettered) + ' dead-lettered');
      if (ing.canary) parts.push(num(ing.canary) + ' canaries skipped');
      if (parts.length) mark('source', 'ok', parts.join(', '));
    }
    const silver = queries.find((q) => q.name === 'silver');
    if (silver && silver.totals) {
      const t = silver.totals, parts = [];
      if (t.rows_skipped) parts.push(num(t.rows_skipped) + ' not edits');
      if (t.rows_late) parts.push(num(t.rows_late) + ' late');
      if (t.rows_duplicate) parts.push(num(t.rows_duplicate) + ' duplicates');
      if (parts.length) mark('silver', 'ok', 'dropped: ' + parts.join(', '));
    }
    const set = o.settings || {};
    if (o.hops && o.hops.sessions === 0 && set.session_gap && set.watermark) {
      mark('sessions', 'ok', 'a session is written ' + goDur(set.session_gap) + ' + ' + goDur(set.watermark) + ' after its last edit');
    }
    if (!o.refresh) mark('gold', 'ok', 'no marts refresh yet');
    else if (o.refresh.error) mark('gold', 'bad', 'refresh failed: ' + o.refresh.error);
    else mark('gold', 'ok', Object.keys(o.refresh.rows || {}).length + ' marts' + (set.refresh && set.refresh !== '0s' ? ', refreshed every ' + goDur(set.refresh) : ''));
    return st;
  }

  // ---- panels ----

  function renderHeader(o) {
    const pill = document.getElementById('ready-pill');
    const ready = !!(o.health && o.health.ready);
    pill.className = 'pill ' + (ready ? 'ok' : 'bad');
    pill.textContent = ready ? 'ready' : 'not ready';
    const at = time(o.at);
    fill('updated', 'updated ' + clock(at) + ' · version ' + (o.version || '?') + ' · up ' + (time(o.started) ? span((at - time(o.started)) / 1000) : '—'));
  }

  function renderHealth(o) {
    const hs = o.health || {};
    const ready = !!hs.ready;
    const reasons = list(hs.reasons);
    const warnings = list(hs.warnings);
    const checked = time(hs.checked_at);
    fill('health',
      h('div', { class: 'verdict' },
        h('span', { class: 'light ' + (ready ? 'ok' : 'bad'), 'aria-hidden': 'true' }),
        h('div', {},
          h('strong', { class: ready ? 'ok-text' : 'bad-text', id: 'ready-verdict', text: ready ? 'Ready' : 'Not ready' }),
          h('div', { class: 'muted', text: ready ? 'every query is moving and every asset check passed' :
            reasons.length === 1 ? 'one thing is wrong:' : reasons.length + ' things are wrong:' }))),
      reasons.length ? h('ul', { class: 'reasons', id: 'reasons' }, reasons.map((r) => h('li', { text: r }))) : null,
      warnings.length ? h('ul', { class: 'warnings', id: 'warnings' }, warnings.map((r) => h('li', { text: 'warning: ' + r }))) : null,
      diskLine(o.disk),
      h('p', { class: 'muted', style: 'margin:8px 0 0;font-size:13px' },
        checked ? 'Checked ' + ago(checked, time(o.at)) + '; the' : 'The', ' same verdict as ', h('a', { href: '/readyz', text: '/readyz' }), '.'));
  }

  // diskLine is the disk budget: the data directory by component, the
  // growth per day and the days left before the disk reserve.
  function diskLine(d) {
    if (!d) return null;
    const parts = list(d.components).map((c) => c.name + ' ' + bytes(c.bytes)).join(', ');
    const growth = !isNum(d.growth_bytes_per_day) ? 'growth: measuring' :
      'growth ' + bytes(d.growth_bytes_per_day) + '/day' + (isNum(d.days_left) ? ', ' + d.days_left.toFixed(1) + ' days left before the disk reserve' : ', not growing');
    return h('p', { class: 'muted', id: 'disk', style: 'margin:8px 0 0;font-size:13px' },
      'Disk: ' + bytes(d.used_bytes) + ' in the data directory (' + parts + '); ' + bytes(d.free_bytes) + ' free, reserve ' + bytes(d.reserve_bytes) + '; ' + growth + '.');
  }

  function renderIngest(o) {
    const i = o.ingest;
    if (!i) {
      fill('ingest', h('p', { class: 'muted', text: 'Ingest is off: this appliance was started without a source (--no-ingest) and only runs the downstream queries on what the broker holds.' }));
      return;
    }
    fill('ingest',
      h('dl', { class: 'figures' },
        fig('connection', i.connected ? 'connected' : 'disconnected', i.connected ? 'ok-text' : 'bad-text'),
        fig('rate', isNum(i.rate_per_s) ? i.rate_per_s.toFixed(i.rate_per_s < 10 ? 1 : 0) + ' ev/s' : '—'),
        fig('events seen', num(i.seen)),
        fig('appended to broker', num(i.appended)),
        fig('dead-lettered', num(i.dead_lettered), i.dead_lettered > 0 ? 'warn-text' : null),
        fig('canaries skipped', num(i.canary)),
        fig('received', bytes(i.bytes)),
        fig('reconnects', num(i.reconnects), i.reconnects > 0 ? 'warn-text' : null),
        fig('broker batches', num(i.batches))),
      h('p', { class: 'muted', style: 'margin:8px 0 0;font-size:12px;overflow-wrap:anywhere' },
        'source ', h('code', { text: (o.settings && o.settings.source) || '?' }),
        i.position ? [' · resume position ', h('code', { text: i.position })] : ' · no resume position yet'));
  }

  function fig(label, value, cls) {
    return h('div', {}, h('dt', { text: label }), h('dd', { class: cls || null, text: value }));
  }

  const HOPS = [
    { key: 'source', name: 'source', what: 'events received over SSE', field: 'source_seen' },
    { key: 'broker', name: 'broker', what: 'records in the recentchange topic', field: 'broker' },
    { key: 'bronze', name: 'bronze', what: 'raw events in bronze.recentchange', field: 'bronze' },
    { key: 'silver', name: 'silver', what: 'edits in silver.edits, each once, on time', field: 'silver' },
    { key: 'sessions', name: 'sessions', what: 'closed sessions in silver.editor_sessions', field: 'sessions' },
    { key: 'gold', name: 'gold', what: 'rows in the gold marts (DuckDB)', field: 'gold' },
    { key: 'dlq', name: 'dead-letter queue', what: 'events that broke the contract, in recentchange.dlq', field: 'dlq' },
  ];
  const ARROWS = ['contract check', 'bronze query', 'silver query', 'sessions query', 'marts refresh'];

  function renderPipeline(o) {
    const hops = o.hops || {};
    const st = hopStates(o);
    const box = (hp) => {
      const x = st[hp.key];
      const count = hp.key === 'source' && !o.ingest ? null : hops[hp.field];
      const markText = { ok: '✓', warn: '!', bad: '✗ problem', off: 'off' }[x.level];
      return h('div', { class: 'hop ' + x.level, style: 'grid-area:' + hp.key, 'data-hop': hp.key, 'data-level': x.level },
        h('div', { class: 'top' }, h('span', { class: 'name', text: hp.name }), h('span', { class: 'mark', text: markText })),
        h('div', { class: 'count', 'data-count': isNum(count) ? String(count) : '', text: num(count) }),
        h('div', { class: 'what', text: hp.what }),
        x.notes.length ? h('ul', { class: 'notes' }, x.notes.map((n) => h('li', { class: n.level, text: n.text }))) : null);
    };
    const arrows = ARROWS.map((label, i) => h('div', { class: 'arrow', style: 'grid-area:a' + (i + 1), 'aria-hidden': 'true' }, h('span', { text: label })));
    fill('pipeline',
      h('div', { class: 'flow' }, HOPS.map(box), arrows,
        h('div', { class: 'arrow down', style: 'grid-area:av', 'aria-hidden': 'true' }, h('span', { text: 'violations' }))));
  }

  function renderQueries(o) {
    const qs = list(o.queries);
    if (!qs.length) {
      fill('queries', h('p', { class: 'muted', text: 'No query has started yet.' }));
      return;
    }
    const head = ['query', 'batch', 'lag (records)', 'lag (s)', 'last batch', 'last commit', 'batches', 'rows in', 'rows out', 'skipped', 'late', 'duplicates', 'unparseable'];
    const rows = [];
    for (const q of qs) {
      const t = q.totals || {};
      const last = time(t.last_batch_at);
      rows.push(h('tr', { 'data-query': q.name },
        h('td', {}, h('b', { text: q.name }), h('span', { class: 'sub mono', title: 'query id' + (q.query_id_changes ? ' (was ' + q.previous_query_id + ')' : ''), text: (q.query_id || 'no query id yet').slice(0, 8) })),
        h('td', { class: 'num', text: q.batch >= 0 ? num(q.batch) : '—' }),
        h('td', { class: 'num' + (q.lag > 0 ? ' warn-text' : ''), text: num(q.lag) }),
        h('td', { class: 'num', text: q.lag > 0 ? secs(q.lag_s) : '0 s' }),
        h('td', { class: 'num', title: stamp(last) }, secs(q.last_batch_s), h('span', { class: 'sub', text: last ? ago(last, time(o.at)) : 'no batch yet' })),
        h('td', { class: 'num', text: secs(q.last_commit_s) }),
        h('td', { class: 'num', text: num(t.batches) }),
        h('td', { class: 'num', text: num(t.rows_in) }),
        h('td', { class: 'num', text: num(t.rows_out) }),
        h('td', { class: 'num', text: num(t.rows_skipped) }),
        h('td', { class: 'num' + (t.rows_late > 0 ? ' warn-text' : ''), text: num(t.rows_late) }),
        h('td', { class: 'num', text: num(t.rows_duplicate) }),
        h('td', { class: 'num' + (t.rows_unparseable > 0 ? ' warn-text' : ''), text: num(t.rows_unparseable) })));
      if (q.error) rows.push(h('tr', { class: 'err' }, h('td', { colspan: head.length, text: q.name + ': ' + q.error })));
    }
    fill('queries',
      h('div', { class: 'scroll' }, h('table', {},
        h('thead', {}, h('tr', {}, head.map((c, i) => h('th', { class: i ? 'num' : null, text: c })))),
        h('tbody', {}, rows))),
      h('p', { class: 'muted', style: 'margin:6px 0 0;font-size:12px' },
        'Lag: records (bronze: broker offsets; silver and sessions: rows of the table they read) not committed yet, and for how long the query has not been caught up. ' +
        'Skipped: not an edit or a new page. Late: below the watermark. Rows since the appliance started.'));
  }

  // renderFreshness shows the appliance's delay (commit minus the broker's
  // append time, what the 1 s figure measures) as the chart, and the
  // events' age beside it: a replay of old events reads old there, never
  // in the chart.
  function renderFreshness(o) {
    const f = o.freshness || {};
    const series = list(f.series).filter((p) => time(p.minute));
    const at = time(o.at) || new Date();
    const box = h('div', { class: 'chart', id: 'fresh-chart', 'data-points': String(series.length) });
    fill('freshness',
      h('div', { class: 'fresh' },
        h('div', {},
          h('div', { class: 'legend' }, h('span', {}, h('i', { class: 'l50' }), 'p50'), h('span', {}, h('i', { class: 'l95' }), 'p95'),
            h('span', { text: 'per minute: from intake (the broker\'s append) to the silver commit' })),
          box),
        h('dl', { class: 'figures', style: 'grid-template-columns:1fr' },
          fig('intake to commit, last hour p50', secs(f.hour_p50_s)),
          fig('intake to commit, last hour p95', secs(f.hour_p95_s)),
          fig('records read in the last hour', num(series.reduce((n, p) => n + (p.records || 0), 0))),
          fig('event time: newest silver row is', isNum(f.now_s) ? secs(f.now_s) + ' old' : '— (no silver commit since start)'),
          fig('event time at commit, last hour p50', secs(f.event_hour_p50_s)))),
      h('p', { class: 'muted', style: 'margin:6px 0 0;font-size:12px',
        text: 'Event time is commit minus the event\'s meta.dt: it also holds Wikimedia\'s delay, and a replay of old events (the demo) reads old there, not in the chart.' }));
    // Drawn at the box's own width, so its text stays 11 px at any width.
    box.append(chart(series, at, Math.max(240, box.clientWidth || 720)));
  }

  // chart draws p50 and p95 per minute over the hour ending at the
  // observation's minute as an inline SVG W pixels wide.
  function chart(series, at, W) {
    const H = 220, L = 62, R = 14, T = 12, B = 30;
    const end = Math.floor(at.getTime() / 60000) * 60000;
    const start = end - 59 * 60000;
    const x = (t) => L + ((t - start) / (end - start)) * (W - L - R);
    let top = 0;
    for (const p of series) top = Math.max(top, isNum(p.p95_s) ? p.p95_s : 0, isNum(p.p50_s) ? p.p50_s : 0);
    const ax = yAxis(top);
    const y = (v) => T + (1 - v / ax.max) * (H - T - B);
    const g = [];
    for (let i = 0; i <= 4; i++) {
      const v = (ax.max * i) / 4;
      g.push(s('line', { class: i ? 'gridline' : 'axis', x1: L, x2: W - R, y1: y(v), y2: y(v) }));
      g.push(s('text', { class: 'ytick', x: L - 6, y: y(v) + 4, 'text-anchor': 'end' }, ax.label(v)));
    }
    const every = W < 520 ? 30 : 15;
    for (let m = 0; m <= 60; m += every) {
      const t = start + (m === 60 ? 59 : m) * 60000;
      g.push(s('line', { class: 'axis', x1: x(t), x2: x(t), y1: H - B, y2: H - B + 4 }));
      g.push(s('text', { class: 'xtick', x: x(t), y: H - B + 17, 'text-anchor': m === 0 ? 'start' : m === 60 ? 'end' : 'middle' },
        m === 60 ? 'now' : new Date(t).toISOString().slice(11, 16)));
    }
    if (!series.length) {
      g.push(s('text', { class: 'empty', x: (L + W - R) / 2, y: (T + H - B) / 2, 'text-anchor': 'middle' }, 'no records read by silver in the last hour'));
    }
    for (const [key, cls] of [['p95_s', 'p95'], ['p50_s', 'p50']]) {
      let d = '';
      let prev = null;
      for (const p of series) {
        const t = time(p.minute).getTime();
        if (t < start || !isNum(p[key])) {
          prev = null;
          continue;
        }
        d += (prev !== null && t - prev === 60000 ? 'L' : 'M') + x(t).toFixed(1) + ' ' + y(p[key]).toFixed(1);
        prev = t;
      }
      if (d) g.push(s('path', { class: cls, d }));
      for (const p of series) {
        const t = time(p.minute).getTime();
        if (t < start || !isNum(p[key])) continue;
        g.push(s('circle', { class: cls, cx: x(t).toFixed(1), cy: y(p[key]).toFixed(1), r: 3 },
          s('title', {}, new Date(t).toISOString().slice(11, 16) + ' UTC: intake to commit p50 ' + secs(p.p50_s) + ', p95 ' + secs(p.p95_s) +
            ', ' + num(p.records) + ' records; event time p50 ' + secs(p.event_p50_s))));
      }
    }
    return s('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': 'silver: intake to commit per minute, last hour' }, g);
  }

  // yAxis picks the y axis's top and a label for each quarter of it in one
  // unit (s, min, h or d), so every tick is short and the unit is never cut.
  function yAxis(top) {
    const v = Math.max(top * 1.1, 0.5);
    const [unit, name] = v < 120 ? [1, 's'] : v < 2 * 3600 ? [60, 'min'] : v < 2 * 86400 ? [3600, 'h'] : [86400, 'd'];
    const e = Math.pow(10, Math.floor(Math.log10(v / unit)));
    let max = 10 * e;
    for (const m of [1, 2, 4, 6, 8, 10]) {
      if (m * e >= v / unit) {
        max = m * e;
        break;
      }
    }
    return { max: max * unit, label: (x) => (x === 0 ? '0' : +(x / unit).toFixed(2) + ' ' + name) };
  }

  function renderTables(o) {
    const ts = list(o.tables);
    if (!ts.length) {
      fill('tables', h('p', { class: 'muted', text: 'No table could be read.' }));
      return;
    }
    const at = time(o.at);
    const groups = [['bronze and silver', (n) => n.startsWith('bronze.') || n.startsWith('silver.')], ['gold marts', (n) => n.startsWith('gold.')], ['operations', () => true]];
    const seen = new Set();
    const rows = [];
    for (const [title, match] of groups) {
      const in_ = ts.filter((t) => !seen.has(t.name) && match(t.name || ''));
      if (!in_.length) continue;
      rows.push(h('tr', { class: 'group' }, h('td', { colspan: 6, text: title })));
      for (const t of in_) {
        seen.add(t.name);
        if (t.error) {
          rows.push(h('tr', { class: 'err', 'data-table': t.name }, h('td', { text: t.name }), h('td', { colspan: 5, text: t.error })));
          continue;
        }
        const committed = t.CommittedMs ? time(t.CommittedMs) : null;
        rows.push(h('tr', { 'data-table': t.name },
          h('td', { class: 'mono', text: t.name }),
          h('td', { class: 'num', text: num(t.Snapshots) }),
          h('td', { class: 'num', text: num(t.DataFiles) }),
          h('td', { class: 'num', text: num(t.Records) }),
          h('td', { class: 'num', text: bytes(t.DataBytes) }),
          h('td', { class: 'num', title: stamp(committed), text: committed ? ago(committed, at) : 'no snapshot yet' })));
      }
    }
    fill('tables', h('div', { class: 'scroll' }, h('table', {},
      h('thead', {}, h('tr', {}, ['table', 'snapshots', 'data files', 'rows', 'size', 'last commit'].map((c, i) => h('th', { class: i ? 'num' : null, text: c })))),
      h('tbody', {}, rows))));
  }

  function renderRefresh(o) {
    const r = o.refresh;
    const refreshEvery = o.settings && o.settings.refresh;
    if (!r) {
      fill('refresh', h('p', { class: 'muted', id: 'no-refresh', text: refreshEvery === '0s' ?
        'Marts refresh is off (--refresh 0): no gold marts or asset checks.' :
        'No marts refresh has run since the appliance started' + (refreshEvery ? ' (one runs every ' + goDur(refreshEvery) + ')' : '') + '.' }));
      return;
    }
    const started = time(r.started);
    const checks = list(r.checks);
    const failed = checks.filter((c) => !c.Passed).length;
    const hl = r.highlights || {};
    const rowsPerMart = Object.entries(r.rows || {}).sort();
    fill('refresh',
      h('dl', { class: 'figures', style: 'margin-bottom:10px' },
        fig('last refresh', started ? clock(started) : '—'),
        fig('that was', ago(started, time(o.at))),
        fig('it took', secs(r.duration_s)),
        fig('it rebuilt', r.scope || '—'),
        fig('asset checks', checks.length ? (failed ? failed + ' of ' + checks.length + ' failed' : 'all ' + checks.length + ' passed') : 'none',
          failed ? 'bad-text' : 'ok-text')),
      r.error ? h('p', { class: 'bad-text', id: 'refresh-error', text: 'The refresh could not run to its end: ' + r.error }) : null,
      h('div', { class: 'marts' },
        h('div', {},
          h('h3', { text: 'Asset checks' }),
          checks.length ? h('ul', { class: 'checks' }, checks.map(check)) : h('p', { class: 'muted', text: 'The refresh ran no checks.' })),
        h('div', { class: 'highlights' },
          h('h3', { text: 'Highlights' }),
          rowsPerMart.length ? h('p', { class: 'muted', style: 'margin:0 0 6px;font-size:13px' }, 'rows per mart: ',
            rowsPerMart.map(([k, v], i) => [i ? ' · ' : '', h('span', { class: 'mono', text: k }), ' ' + num(v)])) : null,
          hl.headline ? h('p', { class: 'headline', text: hl.headline }) : h('p', { class: 'muted', text: 'No highlights.' }),
          list(hl.lists).map((l) => [h('div', { class: 'muted', style: 'font-size:13px', text: l.title }),
            h('ol', {}, list(l.items).map((it) => h('li', { text: it })))]))),
      h('p', { class: 'muted', style: 'margin:6px 0 0;font-size:12px', text: 'run ' + (r.run_id || '?') + (refreshEvery ? ' · a refresh every ' + goDur(refreshEvery) : '') }));
  }

  function check(c) {
    const nums = Object.entries(c.Numbers || {}).sort();
    return h('li', { 'data-check': c.Name },
      h('div', { class: 'head' },
        h('span', { class: 'badge ' + (c.Passed ? 'pass' : 'fail'), text: c.Passed ? 'PASS' : 'FAIL' }),
        h('b', { class: 'mono', text: c.Name }),
        h('span', { class: 'muted', text: 'on ' + (c.Asset || '?') })),
      h('p', { class: 'msg' + (c.Passed ? '' : ' bad-text'), text: c.Message || '' }),
      h('div', { class: 'numbers' },
        h('span', {}, 'observed ', h('b', { text: num(c.Observed) })),
        h('span', {}, 'expected ', h('b', { text: num(c.Expected) })),
        nums.map(([k, v]) => h('span', {}, k.replace(/_unix$/, '').replace(/_/g, ' ') + ' ',
          h('b', { text: k.endsWith('_unix') && v > 0 ? stamp(new Date(v * 1000)) : num(v) })))));
  }

  function renderLog(o) {
    const entries = list(o.log);
    if (!entries.length) {
      fill('log', h('p', { class: 'muted', text: 'No warnings or errors since the appliance started.' }));
      return;
    }
    fill('log', h('ul', { class: 'log' }, entries.map((e) => {
      const t = time(e.time);
      return h('li', {},
        h('span', { class: 'muted mono', title: stamp(t), text: clock(t).replace(' UTC', '') }),
        h('span', { class: 'lvl ' + e.level, text: e.level }),
        h('span', { class: 'msgcell' }, e.msg, e.attrs ? h('span', { class: 'attrs mono', text: e.attrs }) : null));
    })), h('p', { class: 'muted', style: 'margin:6px 0 0;font-size:12px', text: 'Newest first, times UTC (' + entries.length + ' kept in memory).' }));
  }

  // SETTINGS name the settings in words; durations are shown as such, and
  // those that a zero turns off say so.
  const SETTINGS = [
    ['source', 'source of the events (SSE)'],
    ['data', 'data directory (broker, catalog, checkpoints)'],
    ['warehouse', 'Iceberg warehouse'],
    ['partitions', 'broker partitions'],
    ['trigger', 'bronze batch every', true],
    ['watermark', 'silver watermark (older events are dropped as late)', true],
    ['session_gap', 'a session ends after a gap of', true],
    ['session_max', 'a session lasts at most', true, true],
    ['refresh', 'gold marts refreshed every', true, true],
    ['max_snapshots', 'snapshots a table may hold before expiry'],
    ['retention', 'broker retention', true, true],
    ['checkpoint_loss', 'on a lost checkpoint'],
  ];

  function renderSettings(o) {
    const set = o.settings || {};
    const known = new Set(SETTINGS.map(([k]) => k));
    const items = SETTINGS.filter(([k]) => k in set).map(([k, label, isDur, zeroOff]) =>
      [label, zeroOff && set[k] === '0s' ? 'off' : isDur ? goDur(set[k]) : set[k], isDur ? set[k] : null]);
    for (const k of Object.keys(set).sort()) if (!known.has(k)) items.push([k.replace(/_/g, ' '), set[k]]);
    const rt = o.runtime;
    const started = time(o.started);
    items.push(['version', o.version || '?'], ['started', stamp(started) || '—']);
    if (rt) {
      items.push(['Go heap in use / live after GC', bytes(rt.heap_in_use_bytes) + ' / ' + bytes(rt.live_heap_bytes)],
        ['goroutines, GC cycles', num(rt.goroutines) + ', ' + num(rt.gc_cycles)]);
    }
    fill('settings', h('dl', { class: 'settings' }, items.map(([label, v, raw]) =>
      h('div', {}, h('dt', { text: label }), h('dd', { class: 'mono', title: raw, text: v === '' ? '—' : v })))));
  }

  // ---- polling ----

  let lastOK = null; // when the last observation arrived
  let failingSince = null;
  let updates = 0;

  function render(o) {
    renderHeader(o);
    renderHealth(o);
    renderIngest(o);
    renderPipeline(o);
    renderQueries(o);
    renderFreshness(o);
    renderTables(o);
    renderRefresh(o);
    renderLog(o);
    renderSettings(o);
  }

  function showBanner(text) {
    const b = document.getElementById('banner');
    if (text) {
      b.textContent = text;
      b.hidden = false;
    } else {
      b.hidden = true;
    }
  }

  async function poll() {
    let o;
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), FETCH_TIMEOUT_MS);
    try {
      const headers = {};
      const token = sessionStorage.getItem('lakehouse-token');
      if (token) headers['Authorization'] = 'Bearer ' + token;
      const r = await fetch('/api/status', { cache: 'no-store', signal: ctl.signal, headers });
      if (r.status === 401) {
        // The page itself holds no data; the data needs the appliance's
        // bearer token (--http-token), kept for this tab only.
        const t = window.prompt('This appliance wants its bearer token (--http-token):', '');
        if (t) sessionStorage.setItem('lakehouse-token', t.trim());
      }
      if (!r.ok) throw new Error('HTTP ' + r.status + (r.status === 401 ? ' (the appliance wants a bearer token)' : ''));
      o = await r.json();
    } catch (err) {
      if (!failingSince) failingSince = new Date();
      document.body.dataset.state = 'unreachable';
      const reason = err && err.name === 'AbortError' ? 'no answer in ' + FETCH_TIMEOUT_MS / 1000 + ' s' : String((err && err.message) || err);
      showBanner('Cannot reach the appliance since ' + clock(failingSince) + ' (' + reason + '); retrying every ' + POLL_MS / 1000 + ' s.' +
        (lastOK ? ' The figures below are from ' + clock(lastOK) + '.' : ''));
      const pill = document.getElementById('ready-pill');
      pill.className = 'pill warn';
      pill.textContent = 'unreachable';
      return;
    } finally {
      clearTimeout(timer);
      setTimeout(poll, POLL_MS);
    }
    failingSince = null;
    lastOK = new Date();
    showBanner('');
    try {
      render(o);
      updates++;
      document.body.dataset.state = 'live';
      document.body.dataset.updates = String(updates);
    } catch (err) {
      document.body.dataset.state = 'broken';
      showBanner('This page could not draw the appliance\'s status: ' + err.message);
      console.error('dashboard: render failed:', err);
    }
  }

  poll();
})();
