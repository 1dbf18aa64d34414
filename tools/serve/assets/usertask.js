// usertask.js: /usertask?type=&complete=&latmin=&latmax=&logtext=: the tasks a filter selects
// (`tasks ... --json`), shortest first, each with its timeline links; /usertask?id=N: one task
// and its events (`tasks --id N --json`).
'use strict';

tdx.start(async () => {
  const {el, link, query, dur} = tdx;
  const p = tdx.params();
  const ms = (ns) => ns / 1e6;
  // Go's task links: the timeline focused on the task (proc view) or its goroutines, opened on
  // the task's interval.
  const timeline = (t) => {
    const frag = `#${ms(t.start_ns)}:${ms(t.start_ns + t.duration_ns)}`;
    return [link('/trace' + query({focustask: t.id}) + frag, 'by proc'), ' · ',
      link('/trace' + query({taskid: t.id}) + frag, 'by goroutine')];
  };

  if (p.id !== undefined) {
    const t = await tdx.data('/data/usertask' + query({id: p.id}));
    document.title = `Task ${t.id}`;
    document.getElementById('title').textContent = `Task ${t.id} of type ${JSON.stringify(t.type)}`;
    const facts = el('table', {class: 'data facts', id: 'summary'}, el('tbody', null,
        el('tr', null, el('th', null, 'Type'), el('td', null, link('/usertask' + query({type: t.type}), JSON.stringify(t.type)))),
        el('tr', null, el('th', null, 'Start'), el('td', {'data-fact': 'start'}, tdx.secs9(t.start_ns) + 's')),
        el('tr', null, el('th', null, 'Duration'), el('td', {'data-fact': 'duration'}, dur(t.duration_ns))),
        el('tr', null, el('th', null, 'State'), el('td', null, t.complete ? 'complete' : 'incomplete')),
        el('tr', null, el('th', null, 'Timeline'), el('td', null, timeline(t),
            el('span', {class: 'actions'},
                tdx.perfettoButton('/jsontrace' + query({focustask: t.id}), `task ${t.id}`))))));
    document.getElementById('content').replaceChildren(facts, el('h2', null, 'Events'),
        tdx.table([{title: 'When', num: true}, {title: 'Elapsed', num: true, cls: 'mono'},
          {title: 'Goroutine', num: true}, {title: 'Event'}],
        t.events, {id: 'events', limit: 2000, render: (e) => [tdx.secs9(e.time_ns),
          el('span', {class: 'mono pre'}, tdx.elapsed(e.elapsed_ns)),
          link('/trace' + query({goid: e.goroutine}), String(e.goroutine)), e.event]}));
    return;
  }

  const q = {type: p.type, complete: p.complete, latmin: p.latmin, latmax: p.latmax, logtext: p.logtext};
  const d = await tdx.data('/data/usertask' + query(q));
  const what = d.filter !== undefined ? d.filter : (d.type !== undefined ? JSON.stringify(d.type) : 'all');
  document.title = `Tasks ${what}`;
  document.getElementById('title').textContent = `Tasks ${what}`;
  const row = (t) => [
    tdx.secs9(t.start_ns) + 's',
    dur(t.duration_ns),
    link('/usertask' + query({id: t.id}), String(t.id)),
    timeline(t),
    t.complete ? 'complete' : 'incomplete',
  ];
  document.getElementById('content').replaceChildren(
      el('p', {id: 'summary'}, `${d.count} tasks, ${d.complete} complete, the shortest first. ` +
          'A task\'s id lists its events.'),
      d.tasks.length ? tdx.table([{title: 'When', num: true}, {title: 'Duration', num: true},
        {title: 'Task', num: true}, {title: 'Timeline'}, {title: 'State'}], d.tasks,
      {id: 'tasks', limit: 500, render: row}) : el('p', {class: 'muted'}, 'No task matches.'));
});
