// userregion.js: /userregion?type=&pc=&latmin=&latmax=&sortby=: the regions a filter selects,
// one by one, and where their time went (`regions --type ... --json`), with the filter's profiles.
'use strict';

tdx.start(async () => {
  const {el, link, query, dur} = tdx;
  const p = tdx.params();
  const filter = {type: p.type, pc: p.pc, latmin: p.latmin, latmax: p.latmax};
  const d = await tdx.data('/data/userregion' + query({...filter, sortby: p.sortby}));
  document.title = `Regions ${d.filter}`;
  document.getElementById('title').textContent = `Regions ${d.filter}`;

  const profiles = [['regionio', 'Network blocking profile'],
    ['regionblock', 'Synchronization blocking profile'], ['regionsyscall', 'Syscall profile'],
    ['regionsched', 'Scheduler latency profile']];
  const summary = el('table', {class: 'data facts', id: 'summary'}, el('tbody', null,
      el('tr', null, el('th', null, 'Regions'), el('td', null, d.filter)),
      el('tr', null, el('th', null, 'Count'), el('td', {'data-fact': 'count'}, String(d.count))),
      el('tr', null, el('th', null, 'Profiles'), el('td', null, profiles.map(([page, text]) => el('div', null,
          link(`/${page}` + query(filter), text), ' ',
          el('a', {class: 'button', href: `/${page}` + query({...filter, raw: 1}),
            download: `${page}.profile`}, `${page}.profile`)))))));

  const sortby = p.sortby || 'Total';
  const sortLink = (col) => '/userregion' + query({...filter, sortby: col});
  const cols = tdx.colours(d.columns).map((colour, i) => ({name: d.columns[i], colour}));
  const max = d.regions.reduce((m, r) => Math.max(m, r.total_ns), 1);
  const who = (r) => [
    link('/trace' + query({goid: r.goroutine}), String(r.goroutine)),
    r.task ? link('/trace' + query({focustask: r.task}), String(r.task)) : '',
  ];
  const row = (r) => [...who(r), dur(r.total_ns), tdx.stackBar(r.stats, cols, r.total_ns, max),
    ...r.stats.map(dur)];
  const head = [{title: 'Goroutine', num: true}, {title: 'Task', num: true},
    {title: 'Total', num: true, href: sortLink('Total'), sorted: sortby === 'Total'},
    {title: '', cls: 'barcell'},
    ...d.columns.map((c) => ({title: c, num: true, href: sortLink(c), sorted: sortby === c}))];
  const content = [summary, el('h2', null, 'Breakdown'),
    el('p', {class: 'muted'}, 'Where each region\'s time went (the columns do not overlap); ' +
        'a column\'s title sorts by it.'),
    d.regions.length ? tdx.legend(d.columns, cols.map((c) => c.colour)) : null,
    d.regions.length ? tdx.table(head, d.regions, {id: 'breakdown', limit: 250, render: row})
                     : el('p', {class: 'muted'}, 'No region matches.')];

  const special = d.regions.filter((r) => r.ranges.some((v) => v > 0));
  if (d.ranges.length && special.length) {
    content.push(el('h2', null, 'Special ranges'),
        el('p', {class: 'muted'}, 'Time in special ranges such as GC mark assist (they overlap the times above).'),
        tdx.table([{title: 'Goroutine', num: true}, {title: 'Task', num: true}, {title: 'Total', num: true},
          ...d.ranges.map((r) => ({title: r, num: true}))],
        special, {id: 'special', limit: 250, render: (r) => [...who(r), dur(r.total_ns), ...r.ranges.map(dur)]}));
  }
  document.getElementById('content').replaceChildren(...content.filter(Boolean));
});
