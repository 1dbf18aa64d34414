// usertasks.js: /usertasks: task types with their counts and histograms of complete tasks'
// durations (`tasks --json`).
'use strict';

tdx.start(async () => {
  const {el, link, query} = tdx;
  const d = await tdx.data('/data/usertasks');
  const rows = d.types.map((t) => [
    el('span', {class: 'mono'}, JSON.stringify(t.type)),
    link('/usertask' + query({type: t.type}), String(t.count)),
    t.complete ? link('/usertask' + query({type: t.type, complete: 1}), String(t.complete)) : '0',
    tdx.histogram(t.histogram, (b) => '/usertask' + query({type: t.type, complete: 1,
      latmin: tdx.dur(b.min_ns), latmax: tdx.dur(b.max_ns)})),
  ]);
  document.getElementById('content').replaceChildren(
      el('p', {id: 'summary'}, `${d.tasks} tasks of ${d.types.length} types. `,
          link('/usertask' + query({complete: 0}), 'The incomplete ones'), '.'),
      tdx.table([{title: 'Task type'}, {title: 'Count', num: true}, {title: 'Complete', num: true},
        {title: 'Duration distribution (complete tasks)'}], rows, {id: 'types'}));
});
