// index.js: the home page: the trace's facts, its split ranges per view as timeline links (each
// also to Perfetto), a time-window form and the analyses.
'use strict';

tdx.start(async () => {
  const {el, link, query, dur} = tdx;
  const [info, ranges] = await Promise.all([tdx.data('/data/info'), tdx.data('/data/ranges')]);

  const name = String(info.index || 'trace').replace(/\.tidx$/, '');
  document.title = `traceidx: ${name}`;
  document.getElementById('title').textContent = name;

  const mb = (b) => (b / 1e6).toFixed(1) + ' MB';
  const facts = [
    ['Go version', info.trace_version],
    ['Span', dur(info.span_ns)],
    ['Events', info.events],
    ['Generations', info.generations],
    ['Goroutines', info.goroutines],
    ['Procs', info.procs],
    ['Threads', info.threads],
    ['Trace', mb(info.trace_bytes)],
    ['Index', `${info.index} (${mb(info.index_bytes)})`],
  ];
  if (info.partial) facts.push(['Partial', JSON.stringify(info.partial)]);
  const tb = document.querySelector('#facts tbody');
  tb.replaceChildren(...facts.filter((f) => f[1] !== undefined).map(([k, v]) =>
    el('tr', null, el('th', {scope: 'row'}, k), el('td', {'data-fact': k}, String(v)))));

  const views = document.getElementById('views');
  views.replaceChildren();
  if (ranges.length) {
    document.getElementById('split-note').textContent =
        `The trace is split into ${ranges.length} ranges of about equal JSON size, as go tool ` +
        'trace splits it, so that a browser can load each one.';
  }
  for (const view of ['proc', 'thread']) {
    const items = ranges.map((r) => {
      const p = {view, start: r.start, end: r.end};
      return el('li', null, link('/trace' + query(p), `View trace by ${view} (${r.name})`),
          el('span', {class: 'actions'},
              tdx.perfettoButton('/jsontrace' + query(p), `${name} by ${view} (${r.name})`)));
    });
    const whole = {view};
    items.push(el('li', null,
        ranges.length ? 'The whole trace by ' + view
                      : link('/trace' + query(whole), `View trace by ${view}`),
        el('span', {class: 'actions'},
            tdx.perfettoButton('/jsontrace' + query(whole), `${name} by ${view}`))));
    views.appendChild(el('ul', {class: 'links', id: `ranges-${view}`}, items));
  }

  const form = document.getElementById('window-form');
  document.getElementById('window-perfetto').addEventListener('click', () => {
    if (!form.reportValidity()) return;
    const view = form.elements.view.value, window = form.elements.window.value.trim();
    tdx.openPerfetto('/jsontrace' + query({view, window}), `${name} ${window}`);
  });
});
