// mmu.js: /mmu: the MMU curve (/mmu?mode=plot, `mmu --json`) drawn as an SVG plot with go tool
// trace's options; a click picks a window size and lists its worst windows (/mmu?mode=details,
// `mmu --json --window NS`), each linked to the timeline with our window parameter.
'use strict';

tdx.start(async () => {
  const {el, link, query, dur} = tdx;
  const NS = 'http://www.w3.org/2000/svg';
  const svg = (tag, attrs, ...kids) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    for (const k of kids) e.appendChild(typeof k === 'string' ? document.createTextNode(k) : k);
    return e;
  };
  const form = document.getElementById('controls');
  const plotBox = document.getElementById('plot');
  const readout = document.getElementById('readout');
  const details = document.getElementById('details');
  const info = await tdx.data('/data/info');

  // Go's flags: stw|background|assist|sweep|perProc|mut.
  const flags = () => {
    const f = ['stw', 'background', 'assist', 'sweep'].filter((n) => form.elements[n].checked);
    if (form.elements.view.value === 'perProc') f.push('perProc');
    if (form.elements.mut.checked) f.push('mut');
    return f.join('|');
  };

  // Plot geometry (SVG user units; the SVG scales to the page's width).
  const W = 960, H = 420, L = 56, R = 16, T = 16, B = 44;
  const colours = ['#2f6fde', '#db4437', '#f4b400', '#0f9d58', '#ab47bc'];
  let current = null; // {curve, flags, x(ns) -> px, ns(px) -> ns}
  let generation = 0;

  function draw(d, f) {
    const curve = d.curve;
    if (!curve || curve.length === 0) {
      plotBox.replaceChildren(el('p', {class: 'muted'}, 'No curve: the trace has no GC to measure.'));
      current = null;
      return;
    }
    const lo = Math.log10(curve[0][0]), hi = Math.log10(curve[curve.length - 1][0]);
    const span = hi > lo ? hi - lo : 1;
    const x = (ns) => L + (W - L - R) * (Math.log10(ns) - lo) / span;
    const nsAt = (px) => 10 ** (lo + span * (px - L) / (W - L - R));
    const y = (u) => T + (H - T - B) * (1 - u);
    const root = svg('svg', {viewBox: `0 0 ${W} ${H}`, role: 'img',
      'aria-label': 'Minimum mutator utilization by window size'});
    root.appendChild(svg('rect', {x: 0, y: 0, width: W, height: H, fill: '#fff'}));
    for (let k = 0; k <= 4; k++) {
      const u = k / 4;
      root.appendChild(svg('line', {class: 'grid', x1: L, x2: W - R, y1: y(u), y2: y(u)}));
      root.appendChild(svg('text', {x: L - 6, y: y(u) + 4, 'text-anchor': 'end'}, u.toFixed(2)));
    }
    for (let e = Math.ceil(lo); e <= Math.floor(hi); e++) {
      const px = x(10 ** e);
      root.appendChild(svg('line', {class: 'grid', x1: px, x2: px, y1: T, y2: H - B}));
      root.appendChild(svg('text', {x: px, y: H - B + 16, 'text-anchor': 'middle'}, dur(10 ** e)));
    }
    root.appendChild(svg('line', {class: 'axis', x1: L, x2: W - R, y1: H - B, y2: H - B}));
    root.appendChild(svg('line', {class: 'axis', x1: L, x2: L, y1: T, y2: H - B}));
    root.appendChild(svg('text', {x: (L + W - R) / 2, y: H - 6, 'text-anchor': 'middle'}, 'Window size'));
    // One line per value column: the MMU, or with percentiles the utilization at each quantile.
    const series = curve[0].length - 1;
    const names = d.quantiles ? d.quantiles.map((q) => q === 0 ? 'worst window (MMU)' : `worst ${q * 100}%`) : ['MMU'];
    for (let s = 0; s < series; s++) {
      const pts = curve.map((row) => `${x(row[0]).toFixed(2)},${y(row[s + 1]).toFixed(2)}`).join(' ');
      root.appendChild(svg('polyline', {class: 'curve', points: pts, stroke: colours[s % colours.length]}));
    }
    const marker = svg('line', {class: 'marker', x1: -10, x2: -10, y1: T, y2: H - B});
    root.appendChild(marker);
    plotBox.replaceChildren(root, tdx.legend(names.slice(0, series), colours));
    current = {curve, flags: f, x, nsAt, root, marker};

    // The curve's point nearest a pointer position (in SVG units).
    const nearest = (ev) => {
      const pt = root.createSVGPoint();
      pt.x = ev.clientX;
      pt.y = ev.clientY;
      const p = pt.matrixTransform(root.getScreenCTM().inverse());
      const want = Math.log10(nsAt(Math.min(Math.max(p.x, L), W - R)));
      let best = curve[0];
      for (const row of curve) if (Math.abs(Math.log10(row[0]) - want) < Math.abs(Math.log10(best[0]) - want)) best = row;
      return best;
    };
    root.addEventListener('mousemove', (ev) => {
      const row = nearest(ev);
      readout.textContent = `Window ${dur(row[0])}: MMU ${row[1]}` + (ev.buttons ? '' : ' (click for its worst windows)');
    });
    root.addEventListener('mouseleave', () => { readout.textContent = ''; });
    root.addEventListener('click', (ev) => showWorst(nearest(ev)[0]).catch(tdx.fail));
  }

  // The worst windows of `window` ns, each linked to the timeline of that window.
  async function showWorst(window) {
    if (!current) return;
    const px = current.x(window);
    current.marker.setAttribute('x1', px);
    current.marker.setAttribute('x2', px);
    const f = current.flags;
    details.replaceChildren(el('p', {class: 'loading'}, 'Loading…'));
    const d = await tdx.data('/mmu' + query({mode: 'details', flags: f, window}));
    if (f !== current.flags) return;
    const rows = d.map((w) => {
      const a = w.Time - info.first_time_ns, b = a + window;
      const range = `${a}:${b}`;
      return [
        link('/trace' + query({view: 'proc', window: range}) + `#${a / 1e6}:${b / 1e6}`, dur(a)),
        String(w.MutatorUtil),
        el('span', {class: 'actions'}, tdx.perfettoButton('/jsontrace' + query({view: 'proc', window: range}),
            `MMU window at ${dur(a)}`)),
      ];
    });
    details.dataset.window = String(window);
    details.replaceChildren(el('h2', null, `Worst windows of ${dur(window)}`),
        el('p', {class: 'muted'}, 'The lowest mutator utilization first; a window\'s start (since the trace\'s first event) opens it on the timeline.'),
        tdx.table([{title: 'Window start', num: true}, {title: 'Mutator utilization', num: true}, {title: ''}],
            rows, {id: 'worst'}));
  }

  async function refresh() {
    const f = flags(), g = ++generation;
    const d = await tdx.data('/mmu' + query({mode: 'plot', flags: f}));
    if (g !== generation) return;
    details.replaceChildren();
    draw(d, f);
  }
  form.addEventListener('change', () => refresh().catch(tdx.fail));
  await refresh();
});
