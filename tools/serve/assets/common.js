// common.js: what every page of traceidx serve shares: fetching /data/..., building tables,
// histograms and bars, Go's duration text, errors shown in the page, and "Open in Perfetto".
'use strict';

const tdx = (() => {
  // An element: el('a', {href: '/x', class: 'y'}, 'text', otherNode, ...). Attributes whose
  // value is null or undefined are left out; children may be strings, numbers, nodes or arrays.
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    append(e, kids);
    return e;
  }

  function append(parent, kids) {
    for (const k of kids) {
      if (k === null || k === undefined || k === false) continue;
      if (Array.isArray(k)) append(parent, k);
      else if (k instanceof Node) parent.appendChild(k);
      else parent.appendChild(document.createTextNode(String(k)));
    }
    return parent;
  }

  const link = (href, text) => el('a', {href}, text);

  // A query string from an object, in its key order, without the keys whose value is null or
  // undefined; values are percent-encoded ('+' and spaces too, so no server reads them as each
  // other).
  function query(obj) {
    const parts = [];
    for (const [k, v] of Object.entries(obj)) {
      if (v === null || v === undefined) continue;
      parts.push(encodeURIComponent(k) + '=' + encodeURIComponent(String(v)));
    }
    return parts.length ? '?' + parts.join('&') : '';
  }

  // The page's own parameters, first value of each, as an object in URL order.
  function params() {
    const out = {};
    for (const [k, v] of new URLSearchParams(location.search)) if (!(k in out)) out[k] = v;
    return out;
  }

  // GETs a URL and returns its JSON; a 4xx/5xx answer becomes an Error with the server's message.
  async function data(url) {
    const r = await fetch(url, {headers: {Accept: 'application/json'}});
    if (!r.ok) {
      const text = (await r.text()).trim();
      throw new Error(`${url}: ${r.status} ${r.statusText}${text ? '\n' + text : ''}`);
    }
    return r.json();
  }

  // The page's error box (made at the top of <main> when the page has none).
  function errorBox() {
    let box = document.getElementById('error');
    if (!box) {
      box = el('div', {id: 'error', class: 'error', role: 'alert'});
      const main = document.querySelector('main') || document.body;
      main.insertBefore(box, main.firstChild);
    }
    return box;
  }

  function fail(err) {
    const box = errorBox();
    box.textContent = (box.textContent ? box.textContent + '\n' : '') +
        (err && err.message ? err.message : String(err));
    for (const l of document.querySelectorAll('.loading')) l.remove();
  }

  // Runs a page's set-up once the document is parsed; what it throws is shown in the page.
  function start(fn) {
    const run = () => Promise.resolve().then(fn).catch(fail);
    if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', run);
    else run();
  }

  // ---- numbers as Go and the CLI write them ----

  // n / 10^prec with its fraction's trailing zeros (and a bare point) left out.
  function fraction(n, prec) {
    if (prec === 0) return String(n);
    const p = 10 ** prec;
    const whole = Math.floor(n / p);
    let f = String(n % p).padStart(prec, '0').replace(/0+$/, '');
    return f ? `${whole}.${f}` : String(whole);
  }

  // A duration in ns as Go's time.Duration.String() writes it: 0s, 12ns, 1.5µs, 2.25ms,
  // 1.000000001s, 1m2.5s, 1h0m0s.
  function dur(ns) {
    let n = Number(ns);
    if (!Number.isFinite(n)) return String(ns);
    if (n === 0) return '0s';
    const sign = n < 0 ? '-' : '';
    n = Math.abs(Math.round(n));
    if (n < 1e3) return sign + n + 'ns';
    if (n < 1e6) return sign + fraction(n, 3) + 'µs';
    if (n < 1e9) return sign + fraction(n, 6) + 'ms';
    const secs = Math.floor(n / 1e9), frac = n % 1e9;
    let text = fraction((secs % 60) * 1e9 + frac, 9) + 's';
    const mins = Math.floor(secs / 60);
    if (mins > 0) {
      text = (mins % 60) + 'm' + text;
      const hours = Math.floor(mins / 60);
      if (hours > 0) text = hours + 'h' + text;
    }
    return sign + text;
  }

  // ns as seconds with nine decimals (Go's "%.9f" of the seconds).
  function secs9(ns) {
    const n = Math.abs(Number(ns));
    const text = `${Math.floor(n / 1e9)}.${String(n % 1e9).padStart(9, '0')}`;
    return Number(ns) < 0 ? '-' + text : text;
  }

  // The time between two of a task's events as Go's task page writes it: "%.9f" seconds, a
  // sub-second value with its leading zeros blanked (".     2496").
  function elapsed(ns) {
    const t = secs9(ns);
    if (Number(ns) < 0 || Number(ns) >= 1e9) return t;
    const dot = t.indexOf('.');
    const digits = t.slice(dot + 1);
    const lead = digits.length - digits.replace(/^0+/, '').length;
    return ' '.repeat(dot) + '.' + ' '.repeat(lead) + digits.slice(lead);
  }

  // A share as a percentage with one decimal.
  const percent = (part, whole) => whole > 0 ? (100 * part / whole).toFixed(1) + '%' : '';

  // ---- tables ----

  // cols: [{title, num, href, sorted, cls, tip}] (or plain strings); rows: arrays of cells, each
  // a string, number, node, array of those, or null; or, with opts.render, items that render()
  // turns into such arrays when they are shown. opts.limit rows are shown at first, with a button
  // that shows the rest.
  function table(cols, rows, opts) {
    opts = opts || {};
    const render = opts.render || ((r) => r);
    cols = cols.map((c) => typeof c === 'string' ? {title: c} : c);
    const head = el('tr', null, cols.map((c) => el('th', {
      class: [c.num ? 'num' : '', c.sorted ? 'sorted' : ''].join(' ').trim() || null,
      title: c.tip,
      scope: 'col',
    }, c.href ? link(c.href, c.title) : c.title)));
    const body = el('tbody');
    const t = el('table', {class: 'data' + (opts.class ? ' ' + opts.class : ''), id: opts.id},
        el('thead', null, head), body);
    const addRows = (from, to) => {
      const frag = document.createDocumentFragment();
      for (let i = from; i < to; i++) {
        frag.appendChild(el('tr', null, render(rows[i], i).map((v, j) =>
          el('td', {class: cols[j] && cols[j].num ? 'num' : (cols[j] && cols[j].cls) || null}, v))));
      }
      body.appendChild(frag);
    };
    const limit = opts.limit || rows.length;
    addRows(0, Math.min(limit, rows.length));
    if (rows.length <= limit) return t;
    const more = el('button', {type: 'button'}, `Show all ${rows.length} rows`);
    more.addEventListener('click', () => {
      addRows(limit, rows.length);
      more.remove();
    });
    return el('div', null, t, el('p', null, `${limit} of ${rows.length} rows shown. `, more));
  }

  // A histogram of durations (the CLI's {min_ns, max_ns, count} buckets, smallest first) as Go's
  // pages draw one: each bucket labelled with its lower bound, a bar, its count (a link to the
  // bucket's items when linkFn gives one), and the last bucket's upper bound under them.
  function histogram(buckets, linkFn) {
    if (!buckets || buckets.length === 0) return el('span', {class: 'muted'}, '(none complete)');
    const max = buckets.reduce((m, b) => Math.max(m, b.count), 1);
    const rows = buckets.map((b) => {
      const bar = el('div', {class: 'histbar' + (b.count ? '' : ' zero')});
      bar.style.width = (100 * b.count / max) + '%';
      const href = b.count && linkFn ? linkFn(b) : null;
      return el('tr', null,
          el('td', {class: 'label'}, dur(b.min_ns)),
          el('td', {class: 'barcell'}, bar),
          el('td', {class: 'count'}, href ? link(href, b.count) : String(b.count)));
    });
    rows.push(el('tr', null, el('td', {class: 'label'}, dur(buckets[buckets.length - 1].max_ns))));
    return el('table', {class: 'hist'}, el('tbody', null, rows));
  }

  // Colours of the time categories in stacked bars, by column name, then by position.
  const named = {
    'Execution time': '#4285f4',
    'Sched wait time': '#f4b400',
    'Syscall execution time': '#0f9d58',
    'Block time (syscall)': '#7cb342',
    'Unknown time': '#bdbdbd',
  };
  const others = ['#db4437', '#ab47bc', '#00acc1', '#ff7043', '#9e9d24', '#5c6bc0', '#8d6e63',
    '#ec407a', '#26a69a', '#78909c'];
  function colours(columns) {
    let k = 0;
    return columns.map((c) => named[c] || others[k++ % others.length]);
  }

  // A bar of `total` out of `scale`, split into `values` with their colours.
  function stackBar(values, cols, total, scale) {
    const outer = el('div', {class: 'stack-bar'});
    outer.style.width = (scale > 0 ? 100 * total / scale : 0) + '%';
    values.forEach((v, i) => {
      if (!(v > 0) || !(total > 0)) return;
      const s = el('span', {title: `${cols[i].name}: ${dur(v)}`});
      s.style.width = (100 * v / total) + '%';
      s.style.background = cols[i].colour;
      outer.appendChild(s);
    });
    return outer;
  }

  function legend(names, cols) {
    return el('div', {class: 'legend'}, names.map((n, i) => {
      const sw = el('span', {class: 'swatch'});
      sw.style.background = cols[i];
      return el('span', null, sw, n);
    }));
  }

  // ---- Perfetto ----

  const PERFETTO = 'https://ui.perfetto.dev';

  // Opens ui.perfetto.dev in a new window and hands it the JSON at `url` through its documented
  // postMessage protocol: 'PING' until the window answers 'PONG', then {perfetto: {buffer, title,
  // url}}. The window is opened at once, in the click, so that pop-up blockers allow it; the JSON
  // is fetched meanwhile.
  function openPerfetto(url, title) {
    const abs = new URL(url, location.href).href;
    const win = window.open(PERFETTO);
    if (!win) {
      fail(new Error('The browser blocked the Perfetto window: allow pop-ups for this page.'));
      return;
    }
    let buffer = null, ready = false, sent = false, tries = 0;
    const stop = () => {
      clearInterval(timer);
      window.removeEventListener('message', onMessage);
    };
    const send = () => {
      if (sent || !ready || !buffer) return;
      sent = true;
      win.postMessage({perfetto: {buffer, title, url: abs}}, PERFETTO);
    };
    const onMessage = (ev) => {
      if (ev.origin !== PERFETTO || ev.source !== win || ev.data !== 'PONG') return;
      ready = true;
      stop();
      send();
    };
    window.addEventListener('message', onMessage);
    // The window's page cannot hear before it has loaded: ask again until it answers (for a
    // minute, or until it is closed).
    const timer = setInterval(() => {
      if (win.closed || ++tries > 240) return stop();
      win.postMessage('PING', PERFETTO);
    }, 250);
    fetch(url).then(async (r) => {
      if (!r.ok) throw new Error(`${url}: ${r.status} ${r.statusText}\n${(await r.text()).trim()}`);
      buffer = await r.arrayBuffer();
      send();
    }).catch((err) => {
      stop();
      fail(err);
    });
  }

  // A button that opens the JSON at `url` in Perfetto.
  function perfettoButton(url, title, text) {
    const b = el('button', {type: 'button', class: 'perfetto', 'data-json': url,
      title: 'Hand this JSON to ui.perfetto.dev (in a new window)'}, text || 'Open in Perfetto');
    b.addEventListener('click', () => openPerfetto(url, title));
    return b;
  }

  // What /trace's or /jsontrace's parameters ask for, in words.
  function describeView(p) {
    const parts = [p.view === 'thread' || p.view === 'threads' ? 'by thread' : 'by proc'];
    if (p.goid) parts.push(`goroutine ${p.goid}`);
    else if (p.focustask) parts.push(`task ${p.focustask}`);
    else if (p.taskid) parts.push(`task ${p.taskid} (its goroutines)`);
    if (p.start || p.end) parts.push(`events ${p.start || 0}–${p.end || ''}`);
    if (p.window) parts.push(`window ${p.window}`);
    return parts.join(', ');
  }

  return {el, append, link, query, params, data, fail, start, dur, secs9, elapsed, percent,
    table, histogram, colours, stackBar, legend, openPerfetto, perfettoButton, describeView};
})();
