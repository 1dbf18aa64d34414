// userregions.js: /userregions: regions by type and start frame, with counts and duration
// histograms (`regions --json`).
'use strict';

tdx.start(async () => {
  const {el, link, query} = tdx;
  const d = await tdx.data('/data/userregions');
  // Go's links give the frame's pc in hexadecimal without 0x.
  const pcArg = (pc) => String(pc).replace(/^0x/i, '');
  const rows = d.types.map((t) => [
    el('span', {class: 'mono'}, JSON.stringify(t.type)),
    t.func || t.pc !== '0x0' ? [el('div', null, `${t.func} @ ${t.pc}`),
      el('div', {class: 'muted'}, t.file ? `${t.file}:${t.line}` : '')] : el('span', {class: 'muted'}, '(no stack)'),
    link('/userregion' + query({type: t.type, pc: pcArg(t.pc)}), String(t.count)),
    tdx.histogram(t.histogram, (b) => '/userregion' + query({type: t.type, pc: pcArg(t.pc),
      latmin: tdx.dur(b.min_ns), latmax: tdx.dur(b.max_ns)})),
  ]);
  document.getElementById('content').replaceChildren(
      el('p', {id: 'summary'}, `${d.regions} regions in ${d.types.length} groups. `,
          link('/userregion', 'All of them'), ' one by one.'),
      tdx.table([{title: 'Region type'}, {title: 'Start location'}, {title: 'Count', num: true},
        {title: 'Duration distribution'}], rows, {id: 'types'}));
});
