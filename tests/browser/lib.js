// lib.js: what the browser tests of `traceidx serve` share: the server (the real binary), a
// headless Chromium driven by puppeteer-core, pages watched for errors, plain HTTP checks, PNG
// screenshots measured, and Go's duration text written independently of the pages' own.
'use strict';

const {spawn, execFileSync} = require('child_process');
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');

const SKIP = 77;
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

function skip(why) {
  console.log(`SKIP: ${why}`);
  process.exit(SKIP);
}

function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
}

function equal(got, want, what) {
  if (got !== want) {
    throw new Error(`check failed: ${what}\n  got:  ${JSON.stringify(got)}\n  want: ${JSON.stringify(want)}`);
  }
}

// Go's time.Duration.String(), digit by digit on integers (BigInt), as Go's formatter does it.
function goDuration(ns) {
  let u = BigInt(ns);
  const neg = u < 0n;
  if (neg) u = -u;
  if (u === 0n) return '0s';
  // The low `prec` digits as ".ddd" without trailing zeros (nothing when all are zero), and the rest.
  const frac = (v, prec) => {
    let s = '';
    let any = false;
    for (let i = 0; i < prec; i++) {
      const digit = v % 10n;
      any = any || digit !== 0n;
      if (any) s = digit.toString() + s;
      v /= 10n;
    }
    return [any ? '.' + s : '', v];
  };
  let out;
  if (u < 1000000000n) {
    const [prec, unit] = u < 1000n ? [0, 'ns'] : u < 1000000n ? [3, 'µs'] : [6, 'ms'];
    const [f, v] = frac(u, prec);
    out = v.toString() + f + unit;
  } else {
    const [f, secs] = frac(u, 9);
    out = (secs % 60n).toString() + f + 's';
    const mins = secs / 60n;
    if (mins > 0n) {
      out = (mins % 60n).toString() + 'm' + out;
      const hours = mins / 60n;
      if (hours > 0n) out = hours.toString() + 'h' + out;
    }
  }
  return (neg ? '-' : '') + out;
}

// The split synthetic trace's index, built once into `dir` (kept between runs; `build` replaces
// it atomically, so tests running at once may both build it).
function synthIndex(traceidx, dir) {
  const data = process.env.TRACEIDX_TESTDATA;
  if (!data) skip('TRACEIDX_TESTDATA is not set');
  const trace = path.join(data, 'synth', 'synth-split.trace');
  if (!fs.existsSync(trace)) skip(`${trace} not found (the golden synth-split trace)`);
  fs.mkdirSync(dir, {recursive: true});
  const index = path.join(dir, 'synth-split.tidx');
  const fresh = fs.existsSync(index) && fs.statSync(index).mtimeMs >= fs.statSync(trace).mtimeMs &&
      fs.statSync(index).mtimeMs >= fs.statSync(traceidx).mtimeMs;
  if (!fresh) execFileSync(traceidx, ['build', trace, '-o', index], {stdio: ['ignore', 'ignore', 'inherit']});
  return index;
}

// Starts `traceidx serve INDEX --http 127.0.0.1:0` and resolves to {url, proc, stop} once it has
// printed its URL (its first line on stdout).
function startServer(traceidx, index, env) {
  return new Promise((resolve, reject) => {
    const proc = spawn(traceidx, ['serve', index, '--http', '127.0.0.1:0'], {
      env: env || process.env, stdio: ['ignore', 'pipe', 'pipe']});
    let out = '', err = '', done = false;
    const finish = (e, v) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (e) {
        proc.kill('SIGKILL');
        reject(e);
      } else {
        resolve(v);
      }
    };
    // Not a timing check: only a bound on waiting for a server that never says where it is.
    const timer = setTimeout(() => finish(new Error(`traceidx serve printed no URL in 120 s\n${err}`)), 120000);
    proc.stderr.on('data', (d) => { err += d; });
    proc.stdout.on('data', (d) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl < 0) return;
      const m = /https?:\/\/[^\s]+/.exec(out.slice(0, nl));
      if (!m) return finish(new Error(`traceidx serve's first line has no URL: ${out.slice(0, nl)}`));
      const url = m[0].replace(/\/$/, '');
      const stop = () => new Promise((res) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return res();
        proc.once('exit', () => res());
        proc.kill('SIGTERM');
      });
      finish(null, {url, proc, stop, stderr: () => err});
    });
    proc.on('exit', (code, sig) => finish(new Error(`traceidx serve exited (${code ?? sig}) before printing its URL\n${err}`)));
    proc.on('error', (e) => finish(e));
  });
}

// A GET answered: {status, headers, body (a Buffer, unless `headOnly`)}. With headOnly the
// response is dropped after its head (a client going away, which the server must survive).
function get(url, headOnly) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, {agent: false}, (res) => {
      if (headOnly) {
        resolve({status: res.statusCode, headers: res.headers});
        res.destroy();
        return;
      }
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks)}));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

async function getJSON(url) {
  const r = await get(url);
  if (r.status !== 200) throw new Error(`${url}: HTTP ${r.status}: ${r.body.toString().slice(0, 500)}`);
  return JSON.parse(r.body.toString());
}

async function launch() {
  let puppeteer;
  try {
    puppeteer = require('puppeteer-core');
  } catch (e) {
    skip('puppeteer-core is not installed (run `npm ci` in tests/browser, or make test-browser)');
  }
  if (!fs.existsSync(CHROMIUM)) skip(`${CHROMIUM} not found (Debian's chromium; make test-browser installs it)`);
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'tdx-chromium-'));
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    userDataDir: profile,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--disable-dev-shm-usage'],
  });
  const close = async () => {
    await browser.close().catch(() => {});
    fs.rmSync(profile, {recursive: true, force: true});
  };
  return {browser, close};
}

// A new page whose console errors, uncaught exceptions, failed requests and 4xx/5xx answers
// are collected in `problems` (cleared with reset()).
async function watchedPage(browser) {
  const page = await browser.newPage();
  await page.setViewport({width: 1366, height: 850});
  const problems = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console error: ${m.text()} (${(m.location() || {}).url || ''})`);
  });
  page.on('pageerror', (e) => problems.push(`uncaught: ${e.message}`));
  page.on('requestfailed', (r) => {
    const why = (r.failure() || {}).errorText || '';
    // a navigation away (or a download) aborts what the last page still had going
    if (why !== 'net::ERR_ABORTED') problems.push(`request failed: ${r.url()} ${why}`);
  });
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`);
  });
  return {page, problems, reset: () => problems.splice(0)};
}

// Loads a page and waits until its data is shown (no "Loading…" left, the network quiet).
async function load(w, url) {
  w.reset();
  const res = await w.page.goto(url, {waitUntil: 'load', timeout: 120000});
  await w.page.waitForFunction(() => !document.querySelector('.loading'), {timeout: 120000, polling: 50});
  await w.page.waitForNetworkIdle({idleTime: 100, timeout: 120000});
  const errorText = await w.page.evaluate(() => {
    const e = document.getElementById('error');
    return e ? e.textContent.trim() : '';
  });
  return {status: res ? res.status() : 0, errorText};
}

// Fails with what went wrong on the page, if anything did.
async function pageClean(w, url, loaded) {
  const problems = w.problems.slice();
  if (loaded.status >= 400) problems.unshift(`HTTP ${loaded.status}`);
  if (loaded.errorText) problems.unshift(`error shown: ${loaded.errorText}`);
  if (problems.length) throw new Error(`${url}:\n  ${problems.join('\n  ')}`);
}

// Measures a PNG in a blank page of its own (so no page's policy applies): its distinct colours
// and the share of pixels that are not its most common colour (the background).
async function measurePNG(browser, png) {
  const page = await browser.newPage();
  try {
    return await page.evaluate(async (b64) => {
      const img = new Image();
      img.src = 'data:image/png;base64,' + b64;
      await img.decode();
      const c = document.createElement('canvas');
      c.width = img.naturalWidth;
      c.height = img.naturalHeight;
      const ctx = c.getContext('2d');
      ctx.drawImage(img, 0, 0);
      const px = ctx.getImageData(0, 0, c.width, c.height).data;
      const counts = new Map();
      for (let i = 0; i < px.length; i += 4) {
        const k = (px[i] << 16) | (px[i + 1] << 8) | px[i + 2];
        counts.set(k, (counts.get(k) || 0) + 1);
      }
      const total = px.length / 4;
      const top = Math.max(...counts.values());
      return {width: c.width, height: c.height, colours: counts.size, foreground: (total - top) / total};
    }, Buffer.from(png).toString('base64'));
  } finally {
    await page.close();
  }
}

// Replaces window.open and window.postMessage in the page (before its scripts run) so that
// "Open in Perfetto" can be followed without the network: window.open returns the page's own
// window, and every message posted is recorded in window.__posted.
async function stubPerfetto(page) {
  await page.evaluateOnNewDocument(() => {
    window.__opened = [];
    window.__posted = [];
    window.open = (url) => {
      window.__opened.push(String(url));
      return window;
    };
    window.postMessage = (data, origin) => {
      window.__posted.push({
        data: data instanceof Object && data.perfetto ? {perfetto: {
          bytes: data.perfetto.buffer instanceof ArrayBuffer ? data.perfetto.buffer.byteLength : -1,
          title: data.perfetto.title, url: data.perfetto.url}} : data,
        origin,
      });
    };
  });
}

// Clicks a Perfetto button and follows the handshake: PINGs until a PONG from Perfetto's
// origin, then the trace. Returns what was posted with the trace.
async function followPerfetto(page, button) {
  await page.evaluate(() => {
    window.__opened.length = 0;
    window.__posted.length = 0;
  });
  await button.click();
  await page.waitForFunction(() => window.__posted.some((m) => m.data === 'PING'), {timeout: 30000});
  // Once the JSON is in, a wrongly accepted PONG would post the trace at once.
  await page.waitForNetworkIdle({idleTime: 200, timeout: 120000});
  const early = await page.evaluate(() => window.__posted.filter((m) => m.data !== 'PING').length);
  equal(early, 0, 'nothing but PING is posted before Perfetto answers');
  // A PONG from another origin is not Perfetto's.
  await page.evaluate(() => window.dispatchEvent(new MessageEvent('message',
      {data: 'PONG', origin: 'https://evil.example', source: window})));
  const afterForeign = await page.evaluate(() => window.__posted.filter((m) => m.data !== 'PING').length);
  equal(afterForeign, 0, 'a PONG from another origin is ignored');
  await page.evaluate(() => window.dispatchEvent(new MessageEvent('message',
      {data: 'PONG', origin: 'https://ui.perfetto.dev', source: window})));
  await page.waitForFunction(() => window.__posted.some((m) => m.data && m.data.perfetto), {timeout: 120000});
  return page.evaluate(() => ({opened: window.__opened.slice(),
    posted: window.__posted.filter((m) => m.data && m.data.perfetto)}));
}

function shotsDir() {
  const dir = process.env.TDX_SHOTS || path.join(os.tmpdir(), 'traceidx-browser-shots');
  fs.mkdirSync(dir, {recursive: true});
  return dir;
}

module.exports = {SKIP, skip, check, equal, goDuration, synthIndex, startServer, get, getJSON,
  launch, watchedPage, load, pageClean, measurePNG, stubPerfetto, followPerfetto, shotsDir};
