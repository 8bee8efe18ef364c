/**
 * The fleet page (/ of `cuzk-exporter fleet`): every prover at a glance from /fleet.json,
 * polled every 2 s; a click on a prover opens its status page (/targets/NAME/, the box
 * page of box.ts). The page root (page-root) has data-conn, data-attention (provers needing
 * attention) and data-update-count (successful polls so far).
 */
import { $, setActive, setText } from './dom.js';
import { fmtClock } from './format.js';
import { FleetRates, MismatchMemory } from './fleet-rates.js';
import { Json, num, obj, objs, str } from './json.js';
import { renderConn } from './panels/conn.js';
import { buildRows, DEFAULT_DIR, renderFleetTable, SortState } from './panels/fleet-table.js';
import { renderTotals } from './panels/fleet-totals.js';
import { startPolling } from './poller.js';

const POLL_MS = 2000;
const FETCH_TIMEOUT_MS = 5000;

const app = document.getElementById('app') as HTMLElement;
const rates = new FleetRates();
const mismatches = new MismatchMemory();
const state = { data: null as Json | null, okWall: null as Date | null, fetchError: null as string | null, updates: 0, attention: 0 };

function readSort(): SortState {
  const m = /^#sort=([a-z]+):(asc|desc)$/.exec(location.hash);
  if (m && m[1] in DEFAULT_DIR) return { key: m[1], dir: m[2] as 'asc' | 'desc' };
  return { key: 'health', dir: 'asc' };
}
let sort = readSort();

function render(): void {
  const d = state.data;
  if (!d) return;
  const rows = buildRows(objs(d.targets), rates, mismatches, num(d.now_secs) ?? performance.now() / 1000);
  state.attention = rows.filter((r) => r.health !== 'ok').length;
  renderFleetTable(rows, sort);
  renderTotals(app, rows);
  setText($('meta-targets'), String(rows.length));
  setText($('meta-version'), str(d.version) || '—');
  const tf = obj(d.targets_file);
  setText($('meta-targets-file'), tf.last_reload_ok === false ? 'reload FAILED' : 'loaded');
  const banner = $('targets-file-banner');
  setActive(banner, tf.last_reload_ok === false);
  setText(
    banner,
    tf.last_reload_ok === false ? 'The targets file failed to reload: ' + (str(tf.last_error) || 'unknown error') + ' — the previous targets keep running.' : '',
  );
}

function onBody(body: Json): void {
  state.data = body;
  state.okWall = new Date();
  state.fetchError = null;
  const now = num(body.now_secs) ?? performance.now() / 1000;
  rates.add(now, objs(body.targets));
  mismatches.add(now, objs(body.targets));
  render();
  state.updates++;
  app.setAttribute('data-update-count', String(state.updates));
  setText($('updated-at'), 'last update ' + fmtClock(state.okWall));
}

function after(): void {
  const detail = 'Updated ' + (state.okWall ? fmtClock(state.okWall) : '—') + ' · polling every ' + POLL_MS / 1000 + ' s';
  if (state.fetchError !== null) {
    renderConn(app, {
      conn: 'down',
      label: 'UNREACHABLE',
      age: '',
      detail: 'Retrying every ' + POLL_MS / 1000 + ' s',
      stale: 'Cannot fetch /fleet.json (' + state.fetchError + ').' + (state.data ? ' Showing the last answer, from ' + fmtClock(state.okWall!) + '.' : ''),
    });
  } else if (!state.data) renderConn(app, { conn: 'connecting', label: 'CONNECTING', age: '', detail: 'Polling /fleet.json every ' + POLL_MS / 1000 + ' s', stale: null });
  else renderConn(app, { conn: 'live', label: 'LIVE', age: '', detail, stale: null });
  let t = 'cuzk fleet';
  if (state.attention > 0) t = '⚠ ' + state.attention + ' need attention · ' + t;
  if (state.fetchError !== null) t = 'UNREACHABLE · ' + t;
  if (document.title !== t) document.title = t;
}

// Sorting: a click on a heading sorts by it (again: the other way); kept in the URL.
document.querySelectorAll<HTMLElement>('[data-testid="fleet-head"] th[data-sort]').forEach((th) => {
  th.querySelector('button')?.addEventListener('click', () => {
    const key = th.getAttribute('data-sort') || 'name';
    sort = sort.key === key ? { key, dir: sort.dir === 'asc' ? 'desc' : 'asc' } : { key, dir: DEFAULT_DIR[key] || 'asc' };
    history.replaceState(null, '', '#sort=' + sort.key + ':' + sort.dir);
    render();
  });
});
window.addEventListener('hashchange', () => {
  sort = readSort();
  render();
});

startPolling({ url: 'fleet.json', intervalMs: POLL_MS, timeoutMs: FETCH_TIMEOUT_MS, onBody, onError: (m) => (state.fetchError = m), after });
