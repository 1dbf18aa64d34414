// trace-noviewer.js: /trace when no Go viewer was found: the same parameters' JSON offered to
// Perfetto and as a download.
'use strict';

tdx.start(() => {
  const url = '/jsontrace' + location.search;
  const p = tdx.params();
  const what = tdx.describeView(p);
  document.getElementById('what').textContent = what;
  document.title = `traceidx: ${what}`;
  const dl = document.getElementById('download');
  dl.href = url;
  dl.download = 'trace' + (p.window ? '-' + p.window.replace(/[^0-9a-zA-Zµ.]+/g, '_') : '') + '.json';
  document.getElementById('perfetto').addEventListener('click', () => tdx.openPerfetto(url, `traceidx ${what}`));
});
