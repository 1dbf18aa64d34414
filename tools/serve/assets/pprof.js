// pprof.js: /io, /block, /syscall, /sched and their region variants: the profile's costliest
// stacks (`pprof TYPE --json`, with --name or the region filter), and the pprof file (?raw=1).
'use strict';

tdx.start(async () => {
  const {el, link, query, dur} = tdx;
  const page = location.pathname.replace(/^\//, '');
  const kinds = {
    io: 'Network blocking profile',
    block: 'Synchronization blocking profile',
    syscall: 'Syscall profile',
    sched: 'Scheduler latency profile',
  };
  const region = page.startsWith('region');
  const kind = kinds[region ? page.slice(6) : page];
  if (!kind) throw new Error(`${location.pathname}: no such profile`);
  const p = tdx.params();
  const args = region ? {type: p.type, pc: p.pc, latmin: p.latmin, latmax: p.latmax} : {name: p.name};

  let scope = '';
  if (region) {
    const parts = [];
    if (p.type !== undefined) parts.push(JSON.stringify(p.type));
    if (p.pc) parts.push('@ 0x' + p.pc.replace(/^0x/i, ''));
    if (p.latmin) parts.push(`latency >= ${p.latmin}`);
    if (p.latmax) parts.push(`latency <= ${p.latmax}`);
    scope = ' within regions ' + (parts.length ? parts.join(' ') : '(all)');
  } else if (p.name) {
    scope = ` of goroutines ${p.name}`;
  }
  document.title = kind + scope;
  document.getElementById('title').textContent = kind + scope;

  const d = await tdx.data(`/data/${page}` + query(args));
  const raw = `/${page}` + query({...args, raw: 1});
  const row = (s, i) => [
    String(i + 1),
    dur(s.delay_ns),
    tdx.percent(s.delay_ns, d.delay_ns),
    String(s.count),
    s.frames.map((f) => [el('div', null, f.func || f.pc),
      el('div', {class: 'file'}, f.file ? `${f.file}:${f.line}` : '')]),
  ];
  const what = {io: 'network waits', block: 'waits on channels, select and sync',
    syscall: 'system calls', sched: 'waits to run (the stack is what made the goroutine runnable)'};
  document.getElementById('content').replaceChildren(
      el('p', {id: 'summary'}, `${d.count} ${what[region ? page.slice(6) : page]}, ` +
          `${dur(d.delay_ns)} in all, over ${d.stacks.length} stacks. `,
      el('a', {class: 'button', href: raw, download: `${page}.profile`, id: 'raw'},
          `Download ${page}.profile`),
      ' for ', el('code', null, `go tool pprof -http=: ${page}.profile`), '.'),
      d.stacks.length ? tdx.table([{title: '#', num: true}, {title: 'Delay', num: true},
        {title: 'Share', num: true}, {title: 'Count', num: true}, {title: 'Stack (innermost first)', cls: 'stack'}],
      d.stacks, {id: 'stacks', limit: 100, render: row}) : el('p', {class: 'muted'}, 'No stacks.'));
});
