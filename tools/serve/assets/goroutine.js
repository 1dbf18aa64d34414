// goroutine.js: /goroutine?name=N&sortby=COL: one group's goroutines and where their time went
// (`goroutines --name N --sort COL --json`), with the group's profiles.
'use strict';

tdx.start(async () => {
  const {el, link, query, dur} = tdx;
  const p = tdx.params();
  const name = p.name === undefined ? '' : p.name;
  const d = await tdx.data('/data/goroutine' + query({name, sortby: p.sortby}));
  const shown = name === '' ? '(Inactive, no stack trace sampled)' : name;
  document.title = `Goroutines: ${shown}`;
  document.getElementById('title').textContent = 'Goroutines: ' + shown;

  const profiles = [['io', 'Network blocking profile'], ['block', 'Synchronization blocking profile'],
    ['syscall', 'Syscall profile'], ['sched', 'Scheduler latency profile']];
  const summary = el('table', {class: 'data facts', id: 'summary'}, el('tbody', null,
      el('tr', null, el('th', null, 'Start location'), el('td', null, shown)),
      el('tr', null, el('th', null, 'Count'), el('td', {'data-fact': 'count'}, String(d.count))),
      el('tr', null, el('th', null, 'Execution time'),
          el('td', {'data-fact': 'exec_percent'}, `${d.exec_percent} of the total program execution time`)),
      el('tr', null, el('th', null, 'Profiles'), el('td', null, profiles.map(([page, text]) => el('div', null,
          link(`/${page}` + query({name}), text), ' ',
          el('a', {class: 'button', href: `/${page}` + query({name, raw: 1}), download: `${page}.profile`},
              `${page}.profile`)))))));

  const sortby = p.sortby || 'Total';
  const sortLink = (col) => '/goroutine' + query({name, sortby: col});
  const cols = tdx.colours(d.columns).map((colour, i) => ({name: d.columns[i], colour}));
  const max = d.goroutines.reduce((m, g) => Math.max(m, g.total_ns), 1);
  const row = (g) => [
    link('/trace' + query({goid: g.id}), String(g.id)),
    dur(g.total_ns),
    tdx.stackBar(g.stats, cols, g.total_ns, max),
    ...g.stats.map(dur),
  ];
  const head = [
    {title: 'Goroutine'},
    {title: 'Total', num: true, href: sortLink('Total'), sorted: sortby === 'Total'},
    {title: '', cls: 'barcell'},
    ...d.columns.map((c) => ({title: c, num: true, href: sortLink(c), sorted: sortby === c})),
  ];

  const content = [summary, el('h2', null, 'Breakdown'),
    el('p', {class: 'muted'}, 'Where each goroutine\'s time went (the columns do not overlap); ' +
        'a column\'s title sorts by it.'),
    tdx.legend(d.columns, cols.map((c) => c.colour)),
    tdx.table(head, d.goroutines, {id: 'breakdown', limit: 250, render: row})];

  const special = d.goroutines.filter((g) => g.ranges.some((v) => v > 0));
  if (d.ranges.length && special.length) {
    content.push(el('h2', null, 'Special ranges'),
        el('p', {class: 'muted'}, 'Time in special ranges such as GC mark assist (they overlap the times above).'),
        tdx.table([{title: 'Goroutine'}, {title: 'Total', num: true},
          ...d.ranges.map((r) => ({title: r, num: true}))],
        special, {id: 'special', limit: 250, render: (g) => [link('/trace' + query({goid: g.id}),
          String(g.id)), dur(g.total_ns), ...g.ranges.map(dur)]}));
  }
  document.getElementById('content').replaceChildren(...content);
});
