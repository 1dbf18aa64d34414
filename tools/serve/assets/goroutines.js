// goroutines.js: /goroutines: goroutines grouped by start location, with count and execution time
// (`goroutines --json`).
'use strict';

tdx.start(async () => {
  const {el, link, query, dur} = tdx;
  const d = await tdx.data('/data/goroutines');
  const max = d.groups.reduce((m, g) => Math.max(m, g.exec_ns), 1);
  const rows = d.groups.map((g) => {
    const bar = el('div', {class: 'histbar'});
    bar.style.width = (100 * g.exec_ns / max) + '%';
    return [
      link('/goroutine' + query({name: g.name}), g.name === '' ? '(Inactive, no stack trace sampled)' : g.name),
      String(g.count),
      dur(g.exec_ns),
      bar,
    ];
  });
  document.getElementById('content').replaceChildren(
      el('p', {id: 'summary'}, `${d.goroutines} goroutines in ${d.groups.length} groups, ` +
          `total execution time ${dur(d.exec_ns)}`),
      tdx.table([
        {title: 'Start location'},
        {title: 'Count', num: true},
        {title: 'Total execution time', num: true},
        {title: '', cls: 'barcell'},
      ], rows, {id: 'groups'}));
});
