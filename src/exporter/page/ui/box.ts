/**
 * The per-box status page (/ of `run` and `attach`, /targets/NAME/ of `fleet`): polls
 * `status` (relative to the page) every 500 ms and renders one panel per module of
 * panels/. Every panel's test hooks (data-testid) are listed at the top of its module;
 * the page root (page-root) has data-conn = connecting|live|stale|down, data-mismatch =
 * true|false and data-update-count = successful polls so far (wait for it to increase to
 * know the page has applied a new snapshot).
 */
import { BusyWindow } from './busy-window.js';
import { $, setText } from './dom.js';
import { fmtAge, fmtClock } from './format.js';
import { isObj, Json, num, obj, str } from './json.js';
import { computeMismatch, Mismatch } from './mismatch.js';
import { renderAllocations } from './panels/allocations.js';
import { renderMismatch } from './panels/alerts.js';
import { renderBuffers } from './panels/buffers.js';
import { ConnView, renderConn } from './panels/conn.js';
import { renderCounters } from './panels/counters.js';
import { renderGpus } from './panels/gpus.js';
import { renderHeader, targetName } from './panels/header.js';
import { renderMemory } from './panels/memory.js';
import { renderPipelines } from './panels/pipelines.js';
import { renderQueue } from './panels/queue.js';
import { renderSynthesis } from './panels/synthesis.js';
import { startPolling } from './poller.js';

const POLL_MS = 500;
const FETCH_TIMEOUT_MS = 2000;
const STALE_AGE_SECS = 10;

const app = document.getElementById('app') as HTMLElement;
const busy = new BusyWindow(5);
const state = {
  snap: null as Json | null,
  okAt: null as number | null, // performance.now() of the last good poll
  okWall: null as Date | null,
  fetchError: null as string | null,
  updates: 0,
  mismatch: null as Mismatch | null,
};

function render(snap: Json): void {
  const mm = computeMismatch(snap);
  state.mismatch = mm;
  renderHeader(snap);
  renderMismatch(app, mm);
  renderGpus(snap, busy);
  renderPipelines(snap, mm);
  renderMemory(snap);
  renderSynthesis(snap);
  renderQueue(snap);
  renderBuffers(snap);
  renderCounters(snap);
  renderAllocations(snap);
}

function onSnapshot(snap: Json): void {
  state.snap = snap;
  state.okAt = performance.now();
  state.okWall = new Date();
  state.fetchError = null;
  busy.add(snap);
  try {
    render(snap);
  } catch (e) {
    // A malformed snapshot must not stop the page; show it like a failed poll.
    state.fetchError = 'cannot render snapshot: ' + (e instanceof Error ? e.message : String(e));
  }
  state.updates++;
  app.setAttribute('data-update-count', String(state.updates));
  setText($('updated-at'), 'last update ' + fmtClock(state.okWall));
}

/** Connection / staleness, after every poll, good or bad. */
function connView(): ConnView {
  const now = performance.now();
  const snap = state.snap;
  const ex = snap ? obj(snap.exporter) : {};
  const since = state.okAt === null ? null : (now - state.okAt) / 1000;
  const serverAge = num(ex.snapshot_age_secs);
  const ageText = (age: number | null, conn: string) => (age === null ? (conn === 'live' ? 'snapshot age n/a' : '') : 'snapshot ' + fmtAge(age) + ' old');
  if (state.fetchError !== null) {
    const age = snap ? (serverAge || 0) + (since || 0) : null;
    return {
      conn: 'down',
      label: 'UNREACHABLE',
      age: ageText(age, 'down'),
      detail: 'Retrying every ' + POLL_MS / 1000 + ' s',
      stale: snap
        ? 'Cannot fetch /status (' + state.fetchError + '). Showing the last snapshot, ' + fmtAge(age) + ' old.'
        : 'Cannot fetch /status (' + state.fetchError + '). No snapshot yet.',
    };
  }
  if (!snap) return { conn: 'connecting', label: 'CONNECTING', age: '', detail: 'Polling /status every ' + POLL_MS / 1000 + ' s', stale: null };
  if (ex.up === false) {
    const err = str(ex.last_error);
    return {
      conn: 'stale',
      label: 'SOURCE DOWN',
      age: ageText(serverAge, 'stale'),
      detail: 'Exporter reachable; source not answering',
      stale:
        'Source down — the exporter cannot reach the prover' + (err ? ': ' + err : '') + '. ' +
        (serverAge === null ? 'No good snapshot yet.' : 'Showing the last good snapshot, ' + fmtAge(serverAge) + ' old.'),
    };
  }
  const detail = 'Updated ' + (state.okWall ? fmtClock(state.okWall) : '—') + ' · polling every ' + POLL_MS / 1000 + ' s';
  if (serverAge !== null && serverAge > STALE_AGE_SECS) {
    return { conn: 'stale', label: 'STALE', age: ageText(serverAge, 'stale'), detail, stale: 'Snapshot is ' + fmtAge(serverAge) + ' old — the source has not updated it.' };
  }
  return { conn: 'live', label: 'LIVE', age: ageText(serverAge, 'live'), detail, stale: null };
}

function after(): void {
  const v = connView();
  renderConn(app, v);
  const mm = state.mismatch;
  const target = state.snap ? targetName(state.snap) : null;
  let t = target === null ? 'cuzk status' : target + ' · cuzk status';
  if (mm && mm.active) t = '⚠ MISMATCH · ' + t;
  if (v.conn === 'down' || v.conn === 'stale') t = v.label + ' · ' + t;
  if (document.title !== t) document.title = t;
}

startPolling({
  url: 'status',
  intervalMs: POLL_MS,
  timeoutMs: FETCH_TIMEOUT_MS,
  accept: (body) => isObj(body) && isObj(body.exporter),
  onBody: onSnapshot,
  onError: (m) => (state.fetchError = m),
  after,
});
