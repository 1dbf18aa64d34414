// trace.js: the /trace page: go tool trace's catapult viewer (a tr-ui-timeline-view, from the Go
// installation) showing /jsontrace with this page's own parameters; a fragment #A:B
// (milliseconds) picks the interval shown first.
'use strict';

(() => {
  const jsonURL = '/jsontrace' + location.search;
  const status = (text) => {
    const s = document.getElementById('status');
    if (s) s.textContent = text;
  };

  // The interval of the fragment #A:B, in ms as the viewer counts, or null.
  function fragmentRange() {
    const m = /^#?([-+0-9.eE]+):([-+0-9.eE]+)$/.exec(decodeURIComponent(location.hash));
    if (!m) return null;
    const a = parseFloat(m[1]), b = parseFloat(m[2]);
    return Number.isFinite(a) && Number.isFinite(b) ? [a, b] : null;
  }

  function makeViewer() {
    const viewer = document.createElement('tr-ui-timeline-view');
    const container = document.createElement('track-view-container');
    container.id = 'track_view_container';
    viewer.track_view_container = container;
    Polymer.dom(viewer).appendChild(container);
    viewer.id = 'trace-viewer';
    viewer.globalMode = true;
    Polymer.dom(document.body).appendChild(viewer);
    return viewer;
  }

  async function show() {
    const what = tdx.describeView(tdx.params());
    document.getElementById('what').textContent = what;
    document.title = `traceidx: ${what}`;
    status('Loading the trace JSON…');
    const viewer = makeViewer();
    const r = await fetch(jsonURL);
    const text = await r.text();
    if (!r.ok) throw new Error(`${jsonURL}: ${r.status} ${r.statusText}\n${text.trim()}`);
    if (text.length === 0) throw new Error(`${jsonURL}: nothing to show (an unknown goroutine or task?)`);
    status('Importing…');
    const model = new tr.Model();
    const options = new tr.importer.ImportOptions();
    options.shiftWorldToZero = false; // ts 0 is the trace's first event, as in go tool trace
    await new tr.importer.Import(model, options).importTracesWithProgressDialog([text]);
    viewer.model = model;
    viewer.viewTitle = what;
    status('');
    const range = fragmentRange();
    if (range && model.bounds && !model.bounds.isEmpty) {
      const Range = (tr.b.math && tr.b.math.Range) || tr.b.Range;
      const interest = new Range();
      interest.addValue(range[0]);
      interest.addValue(range[1]);
      viewer.trackView.viewport.interestRange.set(interest);
    }
  }

  const onReady = () => show().catch((err) => {
    status('');
    tdx.fail(err);
  });

  document.addEventListener('DOMContentLoaded', () => {
    const actions = document.getElementById('trace-actions');
    actions.appendChild(tdx.perfettoButton(jsonURL, 'traceidx ' + location.search));
    actions.appendChild(tdx.el('a', {class: 'button', href: jsonURL, download: 'trace.json'},
        'Download JSON'));
  });
  // The viewer's components are defined once webcomponents.min.js has loaded the import.
  document.addEventListener('WebComponentsReady', onReady);
})();
