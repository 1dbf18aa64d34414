// serve_test.js: traceidx serve's pages in headless Chromium, on the split synthetic trace.
//   node serve_test.js CHECK TRACEIDX WORKDIR
// CHECK is one of home, links, numbers, mmu, trace, noviewer (ctest's browser.CHECK). WORKDIR
// keeps the index between runs; screenshots go to $TDX_SHOTS. Exits 77 (SKIP) without Chromium,
// puppeteer-core or the shared test data.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const {execFileSync} = require('child_process');
const lib = require('./lib');

const {check, equal, goDuration, getJSON, get, load, pageClean} = lib;

// Go's task page time since the previous event: "%.9f" seconds, a sub-second value's leading
// zeros (before and after the point) blanked.
function goElapsed(ns) {
  const n = BigInt(ns);
  const text = `${n / 1000000000n}.${(n % 1000000000n).toString().padStart(9, '0')}`;
  if (n >= 1000000000n) return text;
  return text.replace(/^0/, ' ').replace(/\.(0*)/, (m, z) => '.' + ' '.repeat(z.length));
}
const secs9 = (ns) => `${BigInt(ns) / 1000000000n}.${(BigInt(ns) % 1000000000n).toString().padStart(9, '0')}`;

// The text of a table's body cells, row by row.
const tableText = (page, sel) => page.$$eval(`${sel} > tbody > tr`, (trs) =>
  trs.map((tr) => [...tr.children].map((td) => td.textContent.trim())));

const facts = (page) => page.$$eval('[data-fact]', (els) =>
  Object.fromEntries(els.map((e) => [e.dataset.fact, e.textContent.trim()])));

function log(msg) {
  console.log(msg);
}

// ---- checks ----

const checks = {};

// The home page: no console error or failed request, the trace's facts and split ranges as
// /data gives them, the analyses' links, the window form, and the Perfetto handshake.
checks.home = async ({url, browser, shots}) => {
  const w = await lib.watchedPage(browser);
  await lib.stubPerfetto(w.page);
  await pageClean(w, '/', await load(w, url + '/'));
  const info = await getJSON(url + '/data/info');
  const ranges = await getJSON(url + '/data/ranges');
  await w.page.screenshot({path: path.join(shots, 'home.png'), fullPage: true});

  const f = await facts(w.page);
  equal(f.Events, String(info.events), 'events');
  equal(f.Goroutines, String(info.goroutines), 'goroutines');
  equal(f.Procs, String(info.procs), 'procs');
  equal(f.Threads, String(info.threads), 'threads');
  equal(f.Generations, String(info.generations), 'generations');
  equal(f.Span, goDuration(info.span_ns), 'span');
  equal(f['Go version'], info.trace_version, 'Go version');
  check(ranges.length === 3, `the split synthetic trace has 3 ranges (got ${ranges.length})`);

  for (const view of ['proc', 'thread']) {
    const links = await w.page.$$eval(`#ranges-${view} a`, (as) => as.map((a) => [a.getAttribute('href'), a.textContent]));
    equal(JSON.stringify(links), JSON.stringify(ranges.map((r) =>
      [`/trace?view=${view}&start=${r.start}&end=${r.end}`, `View trace by ${view} (${r.name})`])), `${view} view's range links`);
    const json = await w.page.$$eval(`#ranges-${view} button.perfetto`, (bs) => bs.map((b) => b.dataset.json));
    equal(JSON.stringify(json), JSON.stringify([...ranges.map((r) =>
      `/jsontrace?view=${view}&start=${r.start}&end=${r.end}`), `/jsontrace?view=${view}`]), `${view} view's Perfetto actions`);
  }
  const hrefs = await w.page.$$eval('a[href]', (as) => as.map((a) => a.getAttribute('href')));
  for (const h of ['/goroutines', '/io', '/io?raw=1', '/block', '/block?raw=1', '/syscall', '/syscall?raw=1',
    '/sched', '/sched?raw=1', '/usertasks', '/userregions', '/mmu']) {
    check(hrefs.includes(h), `the home page links to ${h}`);
  }
  log(`ok: facts, ${ranges.length} ranges per view, analyses`);

  // The window form's Perfetto action: PING until Perfetto's PONG, then the JSON.
  await w.page.type('#window-input', '1s:+2ms');
  const got = await lib.followPerfetto(w.page, await w.page.$('#window-perfetto'));
  const want = await get(url + '/jsontrace?view=proc&window=1s%3A%2B2ms');
  equal(want.status, 200, 'the window\'s JSON answers');
  equal(JSON.stringify(got.opened), JSON.stringify(['https://ui.perfetto.dev']), 'the window opened');
  equal(got.posted.length, 1, 'one trace posted');
  equal(got.posted[0].origin, 'https://ui.perfetto.dev', 'posted to Perfetto\'s origin only');
  equal(got.posted[0].data.perfetto.bytes, want.body.length, 'the ArrayBuffer holds the JSON');
  equal(got.posted[0].data.perfetto.url, url + '/jsontrace?view=proc&window=1s%3A%2B2ms', 'the trace\'s url');
  check(got.posted[0].data.perfetto.title, 'the trace has a title');
  await pageClean(w, '/ (Perfetto)', {status: 200, errorText: ''});
  log(`ok: Perfetto handshake (${want.body.length} bytes)`);

  // The window form opens the timeline of that window.
  await w.page.select('#window-form select[name=view]', 'thread');
  const [res] = await Promise.all([
    w.page.waitForNavigation({waitUntil: 'domcontentloaded'}),
    w.page.click('#window-form button[type=submit]'),
  ]);
  const u = new URL(w.page.url());
  equal(u.pathname, '/trace', 'the form opens /trace');
  equal(u.searchParams.get('view'), 'thread', 'with its view');
  equal(u.searchParams.get('window'), '1s:+2ms', 'and its window');
  equal(res.status(), 200, '/trace answers');
  log('ok: window form');
};

// Every link of the home page and of each analysis page answers; pages are followed to a bounded
// depth, each rendered without error.
checks.links = async ({url, browser}) => {
  const w = await lib.watchedPage(browser);
  const origin = new URL(url).origin;
  const status = new Map(); // URL -> HTTP status
  const failures = [];
  const checkedByKind = new Map(); // links of deeper pages checked, by kind
  const renderedByKind = new Map(); // kinds of the pages rendered (or about to be)
  const keysRendered = new Map(); // path -> parameter names of the pages rendered there
  const queued = new Set([url + '/']);
  let rendered = 0;

  // A link's kind: its path and the names of its parameters.
  const kindOf = (l) => l.pathname + '?' + [...l.searchParams.keys()].sort().join('&');
  const heavy = (l) => l.searchParams.has('raw') || l.pathname === '/jsontrace';
  const isPage = (l) => !l.searchParams.has('raw') && l.pathname !== '/trace' &&
      !/^\/(jsontrace|data\/|assets\/|static\/)/.test(l.pathname);

  async function answer(target, from) {
    if (status.has(target)) return;
    const t0 = Date.now();
    let s;
    try {
      // downloads and JSON are dropped after their head: their content is not checked here
      s = (await get(target, heavy(new URL(target)))).status;
    } catch (e) {
      s = `error ${e.message}`;
    }
    status.set(target, s);
    if (process.env.TDX_VERBOSE && Date.now() - t0 > 300) log(`  slow answer: ${target} (${Date.now() - t0} ms)`);
    if (!(s < 400)) failures.push(`${target} (linked from ${from}): ${s}`);
  }

  // Whether to render a page found at `depth`: every one the home page links; then one of each
  // kind; at depth 3 only those with a parameter not rendered before on a path rendered less
  // than twice.
  function worthRendering(l, depth) {
    if (!isPage(l) || depth > 3) return false;
    if (depth <= 1) return true;
    if (renderedByKind.has(kindOf(l))) return false;
    if (depth < 3) return true;
    const seen = keysRendered.get(l.pathname);
    if (!seen) return true;
    return seen.pages < 2 && [...l.searchParams.keys()].some((k) => !seen.has(k));
  }

  const queue = [{target: url + '/', depth: 0}];
  while (queue.length) {
    const {target, depth} = queue.shift();
    const u = new URL(target);
    const t0 = Date.now();
    await pageClean(w, target, await load(w, target));
    rendered++;
    if (process.env.TDX_VERBOSE) log(`  rendered ${u.pathname}${u.search} (depth ${depth}, ${Date.now() - t0} ms)`);
    const found = await w.page.evaluate(() => [
      ...[...document.querySelectorAll('a[href]')].map((a) => a.href),
      ...[...document.querySelectorAll('[data-json]')].map((b) => new URL(b.dataset.json, location.href).href),
    ]);
    const from = u.pathname + u.search;
    for (const raw of found) {
      const l = new URL(raw);
      if (l.origin !== origin) continue;
      l.hash = '';
      const link = l.href;
      // Every link of the home page and of the analysis pages; deeper, a few of each kind (of
      // the downloads, which take a pass over the events each, one per path).
      if (depth >= 2) {
        const k = heavy(l) ? l.pathname + '?raw' : kindOf(l), n = checkedByKind.get(k) || 0;
        if (status.has(link) || n >= (heavy(l) ? 1 : 3)) continue;
        checkedByKind.set(k, n + 1);
      }
      await answer(link, from);
      if (l.pathname === '/trace') {
        // what that timeline loads: the first of each kind, dropped after its head
        const j = new URL(origin + '/jsontrace' + l.search);
        if (!checkedByKind.has(kindOf(j))) {
          checkedByKind.set(kindOf(j), 1);
          await answer(j.href, from);
        }
      }
      if (!(status.get(link) < 400) || queued.has(link) || !worthRendering(l, depth + 1)) continue;
      queued.add(link);
      renderedByKind.set(kindOf(l), true);
      const seen = keysRendered.get(l.pathname) || Object.assign(new Set(), {pages: 0});
      for (const k of l.searchParams.keys()) seen.add(k);
      seen.pages++;
      keysRendered.set(l.pathname, seen);
      queue.push({target: link, depth: depth + 1});
    }
  }
  if (failures.length) throw new Error(`links that do not answer:\n  ${failures.join('\n  ')}`);
  check(rendered >= 20, `at least 20 pages rendered (got ${rendered})`);
  log(`ok: ${status.size} links answered, ${rendered} pages rendered without error`);
};

// The goroutine, task, region and profile pages show the numbers of their /data JSON.
checks.numbers = async ({url, browser, traceidx, index}) => {
  const w = await lib.watchedPage(browser);
  const q = (o) => '?' + Object.entries(o).map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&');

  // /goroutines, against the JSON and against the CLI's own text table
  await pageClean(w, '/goroutines', await load(w, url + '/goroutines'));
  const gs = await getJSON(url + '/data/goroutines');
  const rows = await tableText(w.page, '#groups');
  equal(rows.length, gs.groups.length, 'goroutine groups');
  gs.groups.forEach((g, i) => {
    equal(rows[i][0], g.name || '(Inactive, no stack trace sampled)', `group ${i} name`);
    equal(rows[i][1], String(g.count), `group ${i} count`);
    equal(rows[i][2], goDuration(g.exec_ns), `group ${i} execution time`);
  });
  equal(await w.page.$eval('#summary', (e) => e.textContent),
      `${gs.goroutines} goroutines in ${gs.groups.length} groups, total execution time ${goDuration(gs.exec_ns)}`, 'summary');
  const text = execFileSync(traceidx, ['goroutines', index], {encoding: 'utf8'}).split('\n');
  const body = text.slice(text.findIndex((l) => l.startsWith('Start location')) + 1).filter((l) => l.trim());
  equal(JSON.stringify(body.map((l) => l.trim().split(/\s+/).slice(-2))),
      JSON.stringify(rows.map((r) => [r[1], r[2]])), 'the page\'s counts and times are the CLI\'s text');
  log(`ok: /goroutines (${rows.length} groups)`);

  // /goroutine: a small group, by total and by another column
  const group = gs.groups.filter((g) => g.count >= 2 && g.count <= 50)[0];
  check(group, 'a group of 2 to 50 goroutines');
  for (const sortby of [undefined, 'Sched wait time']) {
    const params = sortby ? {name: group.name, sortby} : {name: group.name};
    await pageClean(w, '/goroutine', await load(w, url + '/goroutine' + q(params)));
    const d = await getJSON(url + '/data/goroutine' + q(params));
    const f = await facts(w.page);
    equal(f.count, String(d.count), 'goroutine count');
    check(f.exec_percent.startsWith(d.exec_percent + ' '), `execution share ${d.exec_percent}`);
    const heads = await w.page.$$eval('#breakdown thead th', (ths) => ths.map((t) => t.textContent));
    equal(JSON.stringify(heads.slice(3)), JSON.stringify(d.columns), 'breakdown columns');
    const b = await tableText(w.page, '#breakdown');
    equal(b.length, Math.min(250, d.goroutines.length), 'breakdown rows (250 at first)');
    d.goroutines.slice(0, 250).forEach((g, i) => {
      equal(JSON.stringify([b[i][0], b[i][1], ...b[i].slice(3)]),
          JSON.stringify([String(g.id), goDuration(g.total_ns), ...g.stats.map(goDuration)]), `goroutine ${g.id}`);
    });
    const special = d.goroutines.filter((g) => g.ranges.some((v) => v > 0));
    if (special.length) {
      const s = await tableText(w.page, '#special');
      equal(JSON.stringify(s), JSON.stringify(special.slice(0, 250).map((g) =>
        [String(g.id), goDuration(g.total_ns), ...g.ranges.map(goDuration)])), 'special ranges');
    }
  }
  log(`ok: /goroutine?name=${group.name}`);

  // /usertasks, one histogram bucket's tasks, and one task's events
  await pageClean(w, '/usertasks', await load(w, url + '/usertasks'));
  const ts = await getJSON(url + '/data/usertasks');
  const trows = await tableText(w.page, '#types');
  equal(trows.length, ts.types.length, 'task types');
  ts.types.forEach((t, i) => {
    equal(trows[i][0], JSON.stringify(t.type), `task type ${i}`);
    equal(trows[i][1], String(t.count), `task type ${i} count`);
    equal(trows[i][2], String(t.complete), `task type ${i} complete`);
  });
  const withHist = ts.types.findIndex((t) => t.histogram.length > 0);
  const hist = await w.page.$$eval(`#types > tbody > tr:nth-child(${withHist + 1}) table.hist tr`, (trs) =>
    trs.map((tr) => [...tr.children].map((td) => td.textContent.trim())));
  const h = ts.types[withHist].histogram;
  equal(JSON.stringify(hist), JSON.stringify([...h.map((b) => [goDuration(b.min_ns), '', String(b.count)]),
    [goDuration(h[h.length - 1].max_ns)]]), 'a task histogram');
  const bucketLink = await w.page.$$eval('#types table.hist a', (as) =>
    as.map((a) => [a.getAttribute('href'), +a.textContent]).filter(([, n]) => n >= 3 && n <= 30)[0][0]);
  await pageClean(w, bucketLink, await load(w, url + bucketLink));
  const tl = await getJSON(url + '/data' + bucketLink);
  const tlrows = await tableText(w.page, '#tasks');
  equal(JSON.stringify(tlrows.map((r) => [r[0], r[1], r[2], r[4]])), JSON.stringify(tl.tasks.slice(0, 500).map((t) =>
    [secs9(t.start_ns) + 's', goDuration(t.duration_ns), String(t.id), t.complete ? 'complete' : 'incomplete'])),
  `the tasks of ${bucketLink}`);
  const id = tl.tasks[0].id;
  await pageClean(w, `/usertask?id=${id}`, await load(w, url + `/usertask?id=${id}`));
  const te = await getJSON(url + `/data/usertask?id=${id}`);
  const erows = await w.page.$$eval('#events tbody tr', (trs) =>
    trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  equal(JSON.stringify(erows), JSON.stringify(te.events.map((e) =>
    [secs9(e.time_ns), goElapsed(e.elapsed_ns), String(e.goroutine), e.event])), `task ${id}'s events`);
  const tf = await facts(w.page);
  equal(tf.duration, goDuration(te.duration_ns), 'the task\'s duration');
  log(`ok: /usertasks, ${bucketLink} (${tl.tasks.length} tasks), /usertask?id=${id} (${te.events.length} events)`);

  // /userregions and one group's regions
  await pageClean(w, '/userregions', await load(w, url + '/userregions'));
  const rs = await getJSON(url + '/data/userregions');
  const rrows = await tableText(w.page, '#types');
  equal(rrows.length, rs.types.length, 'region groups');
  rs.types.forEach((t, i) => {
    equal(rrows[i][0], JSON.stringify(t.type), `region group ${i} type`);
    equal(rrows[i][2], String(t.count), `region group ${i} count`);
    if (t.func) check(rrows[i][1].startsWith(`${t.func} @ ${t.pc}`), `region group ${i} frame`);
  });
  const rg = rs.types.filter((t) => t.type && t.count >= 5 && t.count <= 300)[0];
  const rparams = {type: rg.type, pc: rg.pc.replace(/^0x/, '')};
  await pageClean(w, '/userregion', await load(w, url + '/userregion' + q(rparams)));
  const rd = await getJSON(url + '/data/userregion' + q(rparams));
  equal((await facts(w.page)).count, String(rd.count), 'regions count');
  const rb = await tableText(w.page, '#breakdown');
  equal(rb.length, Math.min(250, rd.regions.length), 'region rows (250 at first)');
  rd.regions.slice(0, 250).forEach((r, i) => {
    equal(JSON.stringify([rb[i][0], rb[i][1], rb[i][2], ...rb[i].slice(4)]), JSON.stringify([String(r.goroutine),
      r.task ? String(r.task) : '', goDuration(r.total_ns), ...r.stats.map(goDuration)]), `region row ${i}`);
  });
  log(`ok: /userregions, /userregion?type=${rg.type} (${rd.count} regions)`);

  // a profile's top stacks
  await pageClean(w, '/block', await load(w, url + '/block'));
  const pb = await getJSON(url + '/data/block');
  const srows = await tableText(w.page, '#stacks');
  equal(srows.length, Math.min(100, pb.stacks.length), 'stacks shown');
  pb.stacks.slice(0, 100).forEach((s, i) => {
    equal(JSON.stringify(srows[i].slice(0, 2).concat(srows[i][3])),
        JSON.stringify([String(i + 1), goDuration(s.delay_ns), String(s.count)]), `stack ${i + 1}`);
    check(srows[i][4].startsWith(s.frames[0].func), `stack ${i + 1}'s first frame`);
  });
  check((await w.page.$eval('#summary', (e) => e.textContent)).startsWith(`${pb.count} `) &&
        (await w.page.$eval('#summary', (e) => e.textContent)).includes(goDuration(pb.delay_ns)), 'profile summary');
  equal(await w.page.$eval('#raw', (a) => a.getAttribute('href')), '/block?raw=1', 'the profile\'s download');
  log(`ok: /block (${pb.stacks.length} stacks)`);
};

// The MMU plot renders; a click lists the worst windows of that size, linked to the timeline.
checks.mmu = async ({url, browser, shots}) => {
  const w = await lib.watchedPage(browser);
  await lib.stubPerfetto(w.page);
  await pageClean(w, '/mmu', await load(w, url + '/mmu'));
  const info = await getJSON(url + '/data/info');
  const plot = await getJSON(url + '/mmu?mode=plot&flags=stw|background|assist');
  await w.page.waitForSelector('#plot svg polyline');
  const pts = await w.page.$$eval('#plot svg polyline', (ps) => ps.map((p) => p.getAttribute('points').split(' ').length));
  equal(JSON.stringify(pts), JSON.stringify([plot.curve.length]), 'one line through every point of the curve');
  const png = await (await w.page.$('#plot')).screenshot({path: path.join(shots, 'mmu.png')});
  const m = await lib.measurePNG(browser, png);
  check(m.colours >= 3 && m.foreground > 0.01, `the MMU plot is not blank (${JSON.stringify(m)})`);
  log(`ok: MMU plot drawn (${m.colours} colours, ${(100 * m.foreground).toFixed(1)}% drawn)`);

  const box = await (await w.page.$('#plot svg')).boundingBox();
  await w.page.mouse.click(box.x + box.width * 0.6, box.y + box.height * 0.5);
  await w.page.waitForSelector('#worst tbody tr', {timeout: 60000});
  const window = Number(await w.page.$eval('#details', (e) => e.dataset.window));
  check(plot.curve.some((r) => r[0] === window), `the window size clicked (${window}) is one of the curve's`);
  const worst = await getJSON(url + `/mmu?mode=details&flags=stw|background|assist&window=${window}`);
  const rows = await w.page.$$eval('#worst tbody tr', (trs) => trs.map((tr) => {
    const a = tr.querySelector('a');
    return [a.getAttribute('href'), tr.children[0].textContent, tr.children[1].textContent];
  }));
  equal(rows.length, worst.length, 'worst windows listed');
  check(worst.length > 0, 'some worst windows');
  for (let i = 0; i < worst.length; i++) {
    const a = worst[i].Time - info.first_time_ns;
    equal(rows[i][0], `/trace?view=proc&window=${a}%3A${a + window}#${a / 1e6}:${(a + window) / 1e6}`, `worst window ${i}'s link`);
    equal(rows[i][1], goDuration(a), `worst window ${i}'s start`);
    equal(rows[i][2], String(worst[i].MutatorUtil), `worst window ${i}'s utilization`);
  }
  equal((await get(url + rows[0][0].replace(/#.*/, ''))).status, 200, 'the worst window\'s timeline answers');
  const a0 = worst[0].Time - info.first_time_ns;
  const json = await get(url + `/jsontrace?view=proc&window=${a0}%3A${a0 + window}`);
  equal(json.status, 200, 'the worst window\'s JSON answers');
  check(JSON.parse(json.body.toString()).traceEvents.length > 0, 'the worst window has events');
  await w.page.screenshot({path: path.join(shots, 'mmu-worst.png'), fullPage: true});
  log(`ok: click -> ${worst.length} worst windows of ${goDuration(window)}, linked`);

  // Go's options: the percentiles draw a line per quantile.
  await w.page.click('#controls input[name=mut]');
  await w.page.waitForFunction(() => document.querySelectorAll('#plot svg polyline').length > 1, {timeout: 60000});
  const mut = await getJSON(url + '/mmu?mode=plot&flags=stw|background|assist|mut');
  equal(await w.page.$$eval('#plot svg polyline', (ps) => ps.length), mut.quantiles.length, 'a line per percentile');
  await w.page.click('#controls input[value=perProc]');
  await w.page.waitForNetworkIdle({idleTime: 200});
  await pageClean(w, '/mmu (options)', {status: 200, errorText: await w.page.$eval('#error', (e) => e.textContent)});
  log('ok: percentiles and per-goroutine view');
};

// /trace with Go's viewer: the catapult timeline loads the JSON and draws it.
checks.trace = async ({url, browser, shots}) => {
  if ((await get(url + '/static/webcomponents.min.js', true)).status !== 200) {
    lib.skip('the server found no Go viewer (install golang-1.19-src or Go)');
  }
  const w = await lib.watchedPage(browser);
  await w.page.goto(url + '/trace?view=proc&window=1s%3A%2B20ms#1000:1020', {waitUntil: 'load', timeout: 120000});
  await w.page.waitForFunction(() => {
    const err = document.getElementById('error');
    if (err && err.textContent.trim()) return true;
    const v = document.querySelector('tr-ui-timeline-view');
    return v && v.model && !(document.getElementById('status').textContent || '').trim();
  }, {timeout: 120000, polling: 250});
  await w.page.waitForNetworkIdle({idleTime: 300, timeout: 60000});
  const state = await w.page.evaluate(() => {
    const error = ((document.getElementById('error') || {}).textContent || '').trim();
    const v = document.querySelector('tr-ui-timeline-view');
    if (error || !v || !v.model) return {error: error || 'no viewer with a model'};
    const r = v.trackView && v.trackView.viewport.interestRange;
    return {error, empty: v.model.bounds.isEmpty, interest: r && !r.isEmpty ? [r.min, r.max] : null};
  });
  if (state.error) throw new Error(`/trace: ${state.error}\n  ${w.problems.join('\n  ')}`);
  check(!state.empty, 'the model has events');
  equal(JSON.stringify(state.interest), JSON.stringify([1000, 1020]), 'the fragment sets the interval shown');
  const png = await w.page.screenshot({path: path.join(shots, 'trace.png')});
  const m = await lib.measurePNG(browser, png);
  check(m.colours >= 20 && m.foreground > 0.05, `the timeline is not blank (${JSON.stringify(m)})`);
  await pageClean(w, '/trace', {status: 200, errorText: ''});
  log(`ok: Go's viewer drew the window (${m.colours} colours)`);
};

// /trace without a Go installation: says how to get the viewer and offers Perfetto and the JSON.
checks.noviewer = async ({url, browser, shots, traceidx, index}) => {
  check((await get(url + '/static/webcomponents.min.js', true)).status >= 400, 'no viewer is served');
  const w = await lib.watchedPage(browser);
  await lib.stubPerfetto(w.page);
  const page = '/trace?view=proc&start=0&end=2000';
  await pageClean(w, page, await load(w, url + page));
  await w.page.screenshot({path: path.join(shots, 'trace-noviewer.png'), fullPage: true});
  const text = await w.page.evaluate(() => document.body.innerText);
  for (const s of ['golang-1.19-src', '--goroot', 'GOROOT', 'Install Go', 'Open in Perfetto']) {
    check(text.toLowerCase().includes(s.toLowerCase()), `the page mentions ${s}`);
  }
  const href = await w.page.$eval('#download', (a) => a.getAttribute('href'));
  equal(href, '/jsontrace?view=proc&start=0&end=2000', 'the download is the JSON of the same parameters');
  const json = await get(url + href);
  equal(json.status, 200, 'the JSON answers');
  const cli = execFileSync(traceidx, ['query', index, '--start', '0', '--end', '2000']);
  check(Buffer.compare(json.body, cli) === 0, 'the JSON is the CLI\'s');
  const got = await lib.followPerfetto(w.page, await w.page.$('#perfetto'));
  equal(got.posted[0].data.perfetto.bytes, json.body.length, 'Perfetto gets the JSON');
  equal(await w.page.$$eval('a[href="/"]', (as) => as.length > 0), true, 'a link back home');
  log('ok: no viewer: how to get it, Perfetto, the JSON');
};

// The environment of a server that finds no Go: GOROOT an empty folder, no `go` on PATH.
function noGoEnv(dir) {
  const empty = fs.mkdtempSync(path.join(dir, 'goroot-'));
  const pathDirs = (process.env.PATH || '').split(':').filter((d) => d && !fs.existsSync(path.join(d, 'go')));
  return {...process.env, GOROOT: empty, PATH: pathDirs.join(':')};
}

async function main() {
  const [name, traceidx, workdir] = process.argv.slice(2);
  if (!checks[name] || !traceidx || !workdir) {
    console.error(`usage: node serve_test.js ${Object.keys(checks).join('|')} TRACEIDX WORKDIR`);
    process.exit(2);
  }
  const {browser, close} = await lib.launch();
  let server;
  try {
    const index = lib.synthIndex(traceidx, workdir);
    server = await lib.startServer(traceidx, index, name === 'noviewer' ? noGoEnv(workdir) : process.env);
    log(`server: ${server.url}`);
    await checks[name]({url: server.url, browser, shots: lib.shotsDir(), traceidx, index});
  } finally {
    await close();
    if (server) await server.stop();
  }
}

main().then(() => process.exit(0), (e) => {
  console.error(`FAIL: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
