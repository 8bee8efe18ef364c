/*
 * cuzk-exporter — live status page. Plain browser JavaScript: no framework, no build step,
 * no external resources. Served as /page.js next to / (index.html) and /page.css.
 *
 * It polls GET status (relative to the page, so /status) every 500 ms with
 * cache: 'no-store' and updates the DOM in place, keyed by GPU ordinal, worker id, job id
 * and partition index, so nothing flickers and sections keep their height while the set of
 * things shown is unchanged. Every string from the JSON is inserted with textContent or
 * setAttribute — never as HTML.
 *
 * ── Test hooks (data-testid, stable) ───────────────────────────────────────────────────────
 * page-root            the app root. data-conn = connecting|live|stale|down,
 *                      data-mismatch = true|false, data-update-count = successful polls so far
 *                      (wait for it to increase to know the page has applied a new snapshot)
 * section-header, section-alerts, section-gpus, section-memory, section-synthesis,
 * section-queue, section-buffers, section-pipelines, section-counters, section-allocations
 *                      sections (each also has the same id attribute)
 * meta-source, meta-backend, meta-version, meta-uptime, meta-seq   header values
 *
 * mismatch-banner      role=alert; always in the DOM (its space is reserved); visible and
 *                      filled only while the status mismatch holds (empty otherwise). data-active = true|false,
 *                      data-client = page's own verdict (true|false),
 *                      data-exporter = exporter.status_mismatch (true|false|absent),
 *                      data-reasons = exporter.status_mismatch_reasons, comma-separated ("" if none)
 *   mismatch-text        headline ("Status mismatch: 2 partitions on the GPU but 0 workers busy — …")
 *   mismatch-partitions  the partitions in the gpu state (full job ids)
 *   mismatch-exporter    agreement with exporter.status_mismatch, and its reasons
 * invariant-ok         shown in the same place when there is no mismatch (data-active)
 *   invariant-ok-text    counts, and why partitions on the GPU without a proving worker are fine
 *   finalizing-partitions  those partitions (split proving: finalizing), full job ids;
 *                        children finalizing-job (the job id in .mm-jobid), finalizing-partition
 * conn-state           data-state = connecting|live|stale|down
 *   conn-label, snapshot-age, conn-detail
 * stale-banner         visible (data-active=true) when /status cannot be fetched, the
 *                      exporter reports up=false, or the snapshot is old; says how old
 *
 * gpu-list             container of GPU cards
 * gpu-<ordinal>        one GPU card (data-gpu = ordinal); children gpu-name, gpu-ident,
 *                      gpu-lock (data-held = true|false|unknown), gpu-util (text "87 %" or "n/a";
 *                      data-util = fraction 0..1 or "" when unknown; data-util-source =
 *                      lock|workers|none)
 * gpus-mismatch-note   visible in the GPU section while the mismatch holds
 * worker-<worker_id>   one worker row; data-state = idle|proving (raw value), data-gpu
 *   worker-state         "PROVING" / "IDLE" badge
 *   worker-partition     "P12" or "—"
 *   worker-kind          current_kind where reported
 *   worker-job           the FULL current job id, never truncated, or "—"
 *   worker-busy          busy_secs formatted ("312 ms", "5.20 s") or "—"
 *   worker-util          utilisation over the window or "n/a" (data-util as for gpu-util)
 *
 * pipeline-list        container of pipelines
 * pipeline             one job (data-testid is the same for all; the job id is in the
 *                      data-job-id attribute, exact and untruncated), data-kind, data-outcome
 *   pipeline-job-id, pipeline-kind, pipeline-outcome, pipeline-progress, pipeline-age,
 *   pipeline-priority
 *   partition-cell     one partition; data-state (raw), data-index, data-orphan = true when
 *                      in the gpu state, no proving worker reports owning it, not marked
 *                      finalizing, and a mismatch holds; data-finalizing = true when in the
 *                      gpu state and finalizing (split proving: marked so by the source, or
 *                      owned by no proving worker while no mismatch holds);
 *                      children partition-state, partition-synth, partition-gpu
 * legend               colour legend (each state also written as text in every cell)
 *
 * memory-bar (role=meter, aria-valuenow = percent), memory-bar-fill, memory-used,
 * memory-available, memory-total, memory-pct
 * synthesis-slots ("3 / 7"), synthesis-pips, queue-depth, queue-kinds
 * buffers-list; buffer-<key> (dd holding the value; data-key = key)
 * counters-body; counter-row (data-kind = proof kind) with counter-kind, counter-completed,
 *   counter-failed, counter-cancelled, counter-queued; counter-total-completed,
 *   counter-total-failed, counter-total-cancelled, counter-total-queued
 * alloc-body; alloc-row (data-table = srs|pce, data-circuit) with alloc-table,
 *   alloc-circuit, alloc-bytes, alloc-last-used, alloc-evictable; alloc-total
 * gpus-empty, pipelines-empty, alloc-empty   placeholders (data-active = true when shown)
 * updated-at           wall-clock time of the last successful poll
 *
 * ── Computed here ───────────────────────────────────────────────────────────────────────────
 * Status mismatch (DESIGN §9, cuzk_status_mismatch): only a certain contradiction. From the
 * snapshot itself: partitions in the "gpu" state while no worker at all is "proving" (the
 * seed's screenshot). More partitions on the GPU than proving workers is NOT one: with split
 * proving a partition whose kernels are done stays "gpu" (our engine adds
 * "finalizing": true) while its worker already proves the next. The exporter's verdict
 * (exporter.status_mismatch, exact per worker where it knows ownership) and its reasons are
 * shown too; the banner is shown when either says there is a mismatch.
 * Utilisation: from successive snapshots, Δbusy_total_secs / Δuptime_secs over the last
 * ~5 s (gpus[].busy_total_secs = kernel-lock time for a GPU; gpu_workers[].busy_total_secs
 * for a worker; a GPU without a lock counter falls back to the mean of its workers).
 * "n/a" where the source does not report the counters (a real cuzk does not).
 */
(function () {
  'use strict';

  var POLL_MS = 500;
  var FETCH_TIMEOUT_MS = 2000;
  var UTIL_WINDOW_SECS = 5;
  var STALE_AGE_SECS = 10;
  var STATUS_URL = 'status';
  var PARTITION_STATES = ['pending', 'synthesizing', 'synth_done', 'gpu', 'done', 'failed'];
  var STATE_LABEL = {
    pending: 'pending',
    synthesizing: 'synth',
    synth_done: 'ready', // synthesized, waiting for a GPU worker ('synth done' did not fit a cell)
    gpu: 'GPU',
    done: 'done',
    failed: 'FAILED',
  };
  var BAR_ORDER = ['done', 'failed', 'gpu', 'synth_done', 'synthesizing', 'pending'];
  var KIND_ORDER = ['porep-c2', 'snap-update', 'window-post', 'winning-post'];
  var BUFFER_ORDER = ['synth_in_flight', 'provers_in_flight', 'aux_in_flight', 'shells_in_flight', 'pending_handles'];

  // ── small, safe helpers ────────────────────────────────────────────────────────────────

  function isObj(x) { return x !== null && typeof x === 'object' && !Array.isArray(x); }
  function arr(x) { return Array.isArray(x) ? x : []; }
  function obj(x) { return isObj(x) ? x : {}; }
  function num(x) { return typeof x === 'number' && isFinite(x) ? x : null; }
  function int(x) { var n = num(x); return n === null ? null : Math.round(n); }
  function str(x) {
    if (typeof x === 'string') return x;
    if (typeof x === 'number' && isFinite(x)) return String(x);
    return null;
  }
  function plural(n, one, many) { return n + ' ' + (n === 1 ? one : many); }

  function $(testid) { return document.querySelector('[data-testid="' + testid + '"]'); }

  function el(tag, cls, testid) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (testid) e.setAttribute('data-testid', testid);
    return e;
  }
  function setText(e, s) {
    var v = s === null || s === undefined ? '' : String(s);
    if (e.textContent !== v) e.textContent = v;
  }
  function setAttr(e, k, v) {
    var s = String(v);
    if (e.getAttribute(k) !== s) e.setAttribute(k, s);
  }
  function setActive(e, on) { setAttr(e, 'data-active', on ? 'true' : 'false'); }

  /**
   * Keeps `parent`'s children in the order of `items`, reusing the node made for each key.
   * `parent` must hold only keyed children.
   */
  var keyed = new WeakMap();
  function reconcile(parent, items, keyOf, create, update) {
    var map = keyed.get(parent);
    if (!map) { map = new Map(); keyed.set(parent, map); }
    var seen = new Set();
    var cursor = parent.firstChild;
    for (var i = 0; i < items.length; i++) {
      var key = keyOf(items[i], i);
      if (seen.has(key)) key = key + '\u0000#' + i;
      seen.add(key);
      var node = map.get(key);
      if (!node) { node = create(items[i], i); map.set(key, node); }
      update(node, items[i], i);
      if (node === cursor) cursor = cursor.nextSibling;
      else parent.insertBefore(node, cursor);
    }
    map.forEach(function (node, k) {
      if (!seen.has(k)) { node.remove(); map.delete(k); }
    });
  }

  // Per-node references to children, so updates never query the DOM.
  var refs = new WeakMap();
  function ref(node) { return refs.get(node); }

  // ── formatting ─────────────────────────────────────────────────────────────────────────

  function fmtSecs(s) {
    if (s === null) return '—';
    if (s < 0) s = 0;
    if (s < 1) return Math.round(s * 1000) + ' ms';
    if (s < 10) return s.toFixed(2) + ' s';
    if (s < 60) return s.toFixed(1) + ' s';
    if (s < 3600) {
      var m = Math.floor(s / 60);
      return m + ' m ' + pad2(Math.floor(s - m * 60)) + ' s';
    }
    return fmtDuration(s);
  }
  function fmtDuration(s) {
    if (s === null) return '—';
    s = Math.max(0, Math.floor(s));
    var d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
    if (d > 0) return d + ' d ' + pad2(h) + ' h';
    if (h > 0) return h + ' h ' + pad2(m) + ' m';
    return m + ' m ' + pad2(s % 60) + ' s';
  }
  function fmtMs(ms) { return ms === null ? '—' : fmtSecs(ms / 1000); }
  function pad2(n) { return n < 10 ? '0' + n : String(n); }
  function fmtBytes(b) {
    if (b === null) return '—';
    var units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
    var i = 0, v = b;
    while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return (i === 0 ? String(Math.round(v)) : v.toFixed(v < 10 ? 2 : 1)) + ' ' + units[i];
  }
  function fmtPct(f) { return f === null ? 'n/a' : Math.round(f * 100) + ' %'; }
  function fmtInt(n) { return n === null ? '—' : String(n); }
  function fmtAge(s) { return s === null ? '—' : fmtSecs(s); }
  function fmtClock(d) { return pad2(d.getHours()) + ':' + pad2(d.getMinutes()) + ':' + pad2(d.getSeconds()); }

  // ── model derived from a snapshot ─────────────────────────────────────────────────────

  function pkey(job, index) { return JSON.stringify([job, index]); }

  var REASON_TEXT = {
    idle_with_partitions_on_gpu: 'partitions on the GPU while no worker is busy',
    owner_idle: 'a worker reported idle while the newest partition it picked up has not ended',
    surfaces_disagree: 'the daemon\'s surfaces disagree about a worker',
  };

  /**
   * The invariant cuzk's old panel broke, as it holds under split proving: partitions in
   * `gpu` while no worker at all is `proving` (certain); plus the exporter's own verdict.
   */
  function computeMismatch(snap) {
    var workers = arr(snap.gpu_workers).filter(isObj);
    var busy = workers.filter(function (w) { return w.state === 'proving'; });
    var owned = new Set();
    busy.forEach(function (w) { owned.add(pkey(str(w.current_job), int(w.current_partition))); });
    var onGpu = [];
    arr(snap.pipelines).filter(isObj).forEach(function (p) {
      var job = str(p.job_id);
      arr(p.partitions).filter(isObj).forEach(function (part) {
        if (part.state !== 'gpu') return;
        var idx = int(part.index);
        onGpu.push({ job: job, index: idx, gpuMs: num(part.gpu_ms), owned: owned.has(pkey(job, idx)), marked: part.finalizing === true });
      });
    });
    var ex = isObj(snap.exporter) ? snap.exporter : null;
    var exVerdict = ex && typeof ex.status_mismatch === 'boolean' ? ex.status_mismatch : null;
    var reasons = ex ? arr(ex.status_mismatch_reasons).filter(function (r) { return typeof r === 'string'; }) : [];
    var client = onGpu.length > 0 && busy.length === 0 && workers.length > 0;
    var active = client || exVerdict === true;
    // A partition on the GPU that no proving worker owns: finalizing (split proving) unless
    // a mismatch holds, when it is the one the prover lies about (unless marked finalizing).
    onGpu.forEach(function (x) {
      x.orphan = active && !x.owned && !x.marked;
      x.finalizing = x.marked || (!active && !x.owned);
    });
    var keys = function (f) { return new Set(onGpu.filter(f).map(function (x) { return pkey(x.job, x.index); })); };
    return {
      onGpu: onGpu,
      orphans: keys(function (x) { return x.orphan; }),
      finalizing: keys(function (x) { return x.finalizing; }),
      busyCount: busy.length,
      client: client,
      exporter: exVerdict,
      reasons: reasons,
      // attach: workers the daemon's surfaces disagree on ({worker, gpu, busy_per, idle_per})
      disagree: ex ? arr(ex.surfaces_disagree).filter(isObj) : [],
      exOnGpu: ex ? int(ex.partitions_on_gpu) : null,
      exBusy: ex ? int(ex.busy_workers) : null,
      active: active,
    };
  }

  // Utilisation: samples of cumulative busy counters on the snapshot's own clock.
  var samples = [];
  function addSample(snap) {
    var t = num(snap.uptime_secs);
    if (t === null) t = performance.now() / 1000; // no engine clock: use ours
    var last = samples.length ? samples[samples.length - 1] : null;
    if (last && t < last.t) samples = []; // daemon restart
    else if (last && t === last.t) return; // same snapshot served again: nothing new
    var s = { t: t, w: new Map(), g: new Map() };
    arr(snap.gpu_workers).filter(isObj).forEach(function (w) {
      var id = int(w.worker_id), v = num(w.busy_total_secs);
      if (id !== null && v !== null) s.w.set(id, v);
    });
    arr(snap.gpus).filter(isObj).forEach(function (g) {
      var o = int(g.ordinal), v = num(g.busy_total_secs);
      if (o !== null && v !== null) s.g.set(o, v);
    });
    samples.push(s);
    while (samples.length > 2 && samples[1].t <= t - UTIL_WINDOW_SECS) samples.shift();
  }
  /** Busy fraction for a key over the window: number 0..1, null = n/a, undefined = not yet. */
  function rate(which, key) {
    if (!samples.length) return null;
    var cur = samples[samples.length - 1];
    if (!cur[which].has(key)) return null;
    if (samples.length < 2) return undefined;
    var base = samples[0];
    var dt = cur.t - base.t;
    if (!base[which].has(key) || dt <= 0.05) return undefined;
    var dv = cur[which].get(key) - base[which].get(key);
    if (dv < 0) return undefined;
    return Math.max(0, Math.min(1, dv / dt));
  }

  // ── rendering: header and alerts ──────────────────────────────────────────────────────

  var app = document.getElementById('app');
  var state = {
    snap: null,
    okAt: null, // performance.now() of the last good poll
    okWall: null,
    fetchError: null,
    updates: 0,
    mismatch: null,
  };

  function renderHeader(snap) {
    var ex = obj(snap.exporter);
    setText($('meta-source'), str(ex.source) || 'cuzk /status');
    setText($('meta-backend'), str(ex.backend) || str(snap.backend) || '—');
    setText($('meta-version'), str(ex.version) || '—');
    setText($('meta-uptime'), fmtDuration(num(snap.uptime_secs)));
    setText($('meta-seq'), fmtInt(int(snap.last_seq)));
  }

  function renderMismatch(mm) {
    var banner = $('mismatch-banner');
    var ok = $('invariant-ok');
    setActive(banner, mm.active);
    setActive(ok, !mm.active);
    setAttr(banner, 'data-client', mm.client);
    setAttr(banner, 'data-exporter', mm.exporter === null ? 'absent' : mm.exporter);
    setAttr(banner, 'data-reasons', mm.reasons.join(','));
    setAttr(banner, 'data-disagree', mm.disagree.length);
    setAttr(app, 'data-mismatch', mm.active);
    var note = $('gpus-mismatch-note');
    setActive(note, mm.active);

    var n = mm.onGpu.length, b = mm.busyCount;
    var exNums = mm.exOnGpu !== null && mm.exBusy !== null
      ? ' (partitions_on_gpu = ' + mm.exOnGpu + ', busy_workers = ' + mm.exBusy + ')' : '';
    var why = mm.reasons.length ? ' — reason: ' + mm.reasons.join(', ') : '';
    if (mm.active) {
      var headline;
      if (mm.client) {
        headline = 'Status mismatch: ' + plural(n, 'partition', 'partitions') + ' on the GPU but ' +
          plural(b, 'worker', 'workers') + ' busy — the prover\'s own reports contradict each other';
      } else {
        // The exporter knows more than the snapshot (which worker owns which partition).
        var texts = mm.reasons.map(function (r) { return REASON_TEXT[r] || r; });
        headline = 'Status mismatch reported by the exporter: ' + (texts.length ? texts.join('; ') : 'the prover\'s own reports contradict each other');
      }
      if (mm.disagree.length) {
        // Which worker, and which surface says what (e.g. /status idle while TIMELINE proves a WindowPoSt).
        var d = mm.disagree[0];
        headline += ' — worker ' + fmtInt(int(d.worker)) + (int(d.gpu) !== null && int(d.gpu) >= 0 ? ' (GPU ' + int(d.gpu) + ')' : '') +
          ' is proving per ' + (str(d.busy_per) || '?') + ' but idle per ' + (str(d.idle_per) || '?') +
          (mm.disagree.length > 1 ? ' (+' + plural(mm.disagree.length - 1, 'more worker', 'more workers') + ')' : '');
      }
      setText($('mismatch-text'), headline);
      renderMismatchPartitions($('mismatch-partitions'), mm.onGpu);
      var exText;
      if (mm.exporter === true && mm.client) exText = 'Exporter agrees: cuzk_status_mismatch = 1' + why + '.';
      else if (mm.exporter === false) exText = 'Exporter disagrees: cuzk_status_mismatch = 0' + exNums + '. This page computed the mismatch from the same snapshot.';
      else if (mm.exporter === true) exText = 'cuzk_status_mismatch = 1' + why + exNums + '; this snapshot shows ' + plural(n, 'partition', 'partitions') + ' on the GPU and ' + plural(b, 'worker', 'workers') + ' proving.';
      else exText = 'Computed by this page from the snapshot (no exporter verdict in /status).';
      setText($('mismatch-exporter'), exText);
      setText(note, '⚠ ' + plural(n, 'partition', 'partitions') + ' on the GPU, ' + plural(b, 'worker', 'workers') +
        ' proving — do not trust "idle" below');
      renderFinalizing($('finalizing-partitions'), []);
    } else {
      // Empty the hidden banner and note: stale content (a long list of partitions) would
      // keep their reserved space taller than it needs to be after the mismatch clears.
      setText($('mismatch-text'), '');
      var parts = $('mismatch-partitions');
      parts.removeAttribute('data-sig');
      setText(parts, '');
      setText($('mismatch-exporter'), '');
      setText(note, '');
      var fin = mm.onGpu.filter(function (x) { return x.finalizing; });
      var okText = plural(n, 'partition', 'partitions') + ' on the GPU, ' + plural(b, 'worker', 'workers') + ' proving';
      if (fin.length) {
        // Split proving: not a contradiction, and an operator must not read it as one.
        okText += ' — ' + fin.length + ' finalizing: kernels done, GPU lock released, CPU epilogue running while ' +
          (fin.length === 1 ? 'its worker proves its' : 'their workers prove their') + ' next partition (split proving, not a mismatch)';
      } else {
        okText += ' — worker states agree with partition states';
      }
      if (mm.exporter === false) okText += '; exporter agrees (cuzk_status_mismatch = 0).';
      else okText += '.';
      setText($('invariant-ok-text'), okText);
      renderFinalizing($('finalizing-partitions'), fin);
    }
  }

  /** Partitions grouped by job ({job, parts}), in order of first appearance. */
  function groupByJob(parts) {
    var groups = [];
    var byJob = new Map();
    parts.forEach(function (p) {
      var k = p.job === null ? '\u0000' : p.job;
      var g = byJob.get(k);
      if (!g) { g = { job: p.job, parts: [] }; byJob.set(k, g); groups.push(g); }
      g.parts.push(p);
    });
    return groups;
  }

  /** "of <job id>" after a job's partition chips. */
  function appendJobId(item, job) {
    var of = el('span', 'mm-of');
    of.textContent = 'of';
    item.appendChild(of);
    var id = el('span', 'mm-jobid mono');
    id.textContent = job === null ? '(job without id)' : job;
    item.appendChild(id);
  }

  /** Partitions finalizing (split proving), grouped by job, full ids; empty when none. */
  function renderFinalizing(box, fin) {
    var groups = groupByJob(fin);
    var sig = JSON.stringify(groups.map(function (g) { return [g.job, g.parts.map(function (p) { return p.index; })]; }));
    if (box.getAttribute('data-sig') === sig) return;
    box.setAttribute('data-sig', sig);
    box.textContent = '';
    groups.forEach(function (g) {
      var item = el('span', 'fin-job', 'finalizing-job');
      g.parts.forEach(function (p) {
        var chip = el('span', 'fin-part', 'finalizing-partition');
        chip.setAttribute('data-index', p.index === null ? '' : String(p.index));
        chip.textContent = 'P' + (p.index === null ? '?' : p.index);
        item.appendChild(chip);
      });
      appendJobId(item, g.job);
      box.appendChild(item);
    });
  }

  function renderMismatchPartitions(box, onGpu) {
    // Group by job, keep order; rebuilt only when the text would change.
    var groups = groupByJob(onGpu);
    var sig = JSON.stringify(groups.map(function (g) {
      return [g.job, g.parts.map(function (p) { return [p.index, p.orphan, p.gpuMs === null ? null : Math.floor(p.gpuMs / 100)]; })];
    }));
    if (box.getAttribute('data-sig') === sig) return;
    box.setAttribute('data-sig', sig);
    box.textContent = '';
    if (!groups.length) { box.textContent = 'No partition is in the gpu state.'; return; }
    var lead = el('span', 'mm-lead');
    lead.textContent = 'In the gpu state:';
    box.appendChild(lead);
    groups.forEach(function (g) {
      var item = el('span', 'mm-job', 'mismatch-job');
      g.parts.forEach(function (p) {
        var chip = el('span', 'mm-part' + (p.orphan ? ' is-orphan' : ''), 'mismatch-partition');
        chip.setAttribute('data-index', p.index === null ? '' : String(p.index));
        chip.setAttribute('data-orphan', String(p.orphan));
        chip.textContent = 'P' + (p.index === null ? '?' : p.index) +
          (p.gpuMs !== null ? ' · ' + fmtMs(p.gpuMs) : '') + (p.orphan ? ' · no worker' : '');
        item.appendChild(chip);
      });
      appendJobId(item, g.job);
      box.appendChild(item);
    });
  }

  /** Connection / staleness. Called after every poll, good or bad. */
  function renderConn() {
    var now = performance.now();
    var snap = state.snap;
    var ex = snap ? obj(snap.exporter) : {};
    var conn, label, age = null, detail, stale = null;
    var since = state.okAt === null ? null : (now - state.okAt) / 1000;
    var serverAge = num(ex.snapshot_age_secs);

    if (state.fetchError !== null) {
      conn = 'down';
      label = 'UNREACHABLE';
      if (snap) {
        age = (serverAge || 0) + since;
        stale = 'Cannot fetch /status (' + state.fetchError + '). Showing the last snapshot, ' + fmtAge(age) + ' old.';
      } else {
        stale = 'Cannot fetch /status (' + state.fetchError + '). No snapshot yet.';
      }
      detail = 'Retrying every ' + POLL_MS / 1000 + ' s';
    } else if (!snap) {
      conn = 'connecting';
      label = 'CONNECTING';
      detail = 'Polling /status every ' + POLL_MS / 1000 + ' s';
    } else if (ex.up === false) {
      conn = 'stale';
      label = 'SOURCE DOWN';
      age = serverAge;
      var err = str(ex.last_error);
      stale = 'Source down — the exporter cannot reach the prover' + (err ? ': ' + err : '') + '. ' +
        (age === null ? 'No good snapshot yet.' : 'Showing the last good snapshot, ' + fmtAge(age) + ' old.');
      detail = 'Exporter reachable; source not answering';
    } else {
      age = serverAge;
      if (age !== null && age > STALE_AGE_SECS) {
        conn = 'stale';
        label = 'STALE';
        stale = 'Snapshot is ' + fmtAge(age) + ' old — the source has not updated it.';
      } else {
        conn = 'live';
        label = 'LIVE';
      }
      detail = 'Updated ' + (state.okWall ? fmtClock(state.okWall) : '—') + ' · polling every ' + POLL_MS / 1000 + ' s';
    }

    var box = $('conn-state');
    setAttr(box, 'data-state', conn);
    setAttr(app, 'data-conn', conn);
    setText($('conn-label'), label);
    setText($('snapshot-age'), age === null ? (conn === 'live' ? 'snapshot age n/a' : '') : 'snapshot ' + fmtAge(age) + ' old');
    setText($('conn-detail'), detail);
    var sb = $('stale-banner');
    setActive(sb, stale !== null);
    setText(sb, stale || '');

    var mm = state.mismatch;
    var t = 'cuzk status';
    if (mm && mm.active) t = '⚠ MISMATCH · ' + t;
    if (conn === 'down' || conn === 'stale') t = label + ' · ' + t;
    if (document.title !== t) document.title = t;
  }

  // ── GPUs and workers ──────────────────────────────────────────────────────────────────

  function gpuGroups(snap) {
    var groups = new Map();
    function group(key) {
      var g = groups.get(key);
      if (!g) { g = { key: key, ordinal: typeof key === 'number' ? key : null, info: null, workers: [] }; groups.set(key, g); }
      return g;
    }
    arr(snap.gpus).filter(isObj).forEach(function (info) {
      var o = int(info.ordinal);
      group(o === null ? '?' : o).info = info;
    });
    arr(snap.gpu_workers).filter(isObj).forEach(function (w) {
      var o = int(w.gpu_ordinal);
      group(o === null ? '?' : o).workers.push(w);
    });
    var list = Array.from(groups.values());
    list.sort(function (a, b) {
      if (a.ordinal === null) return 1;
      if (b.ordinal === null) return -1;
      return a.ordinal - b.ordinal;
    });
    list.forEach(function (g) {
      g.workers.sort(function (a, b) { return (int(a.worker_id) || 0) - (int(b.worker_id) || 0); });
    });
    return list;
  }

  function createGpuCard(g) {
    var card = el('div', 'gpu-card');
    var head = el('div', 'gpu-head');
    var title = el('div', 'gpu-title');
    var ord = el('span', 'gpu-ord');
    var name = el('span', 'gpu-name', 'gpu-name');
    title.appendChild(ord);
    title.appendChild(name);
    var ident = el('div', 'gpu-ident mono', 'gpu-ident');
    var titleWrap = el('div', 'gpu-titlewrap');
    titleWrap.appendChild(title);
    titleWrap.appendChild(ident);
    var lock = el('div', 'gpu-lock', 'gpu-lock');
    var util = el('div', 'gpu-util-box');
    var utilVal = el('span', 'util-val num', 'gpu-util');
    var utilSrc = el('span', 'util-src');
    util.appendChild(utilVal);
    util.appendChild(utilSrc);
    head.appendChild(titleWrap);
    head.appendChild(lock);
    head.appendChild(util);
    card.appendChild(head);

    var cols = el('div', 'worker worker-cols');
    ['state', 'worker', 'partition', 'current job', 'busy for', 'util'].forEach(function (c) {
      var d = el('div');
      d.textContent = c;
      cols.appendChild(d);
    });
    card.appendChild(cols);
    var rows = el('div', 'worker-rows');
    card.appendChild(rows);
    refs.set(card, { ord: ord, name: name, ident: ident, lock: lock, utilVal: utilVal, utilSrc: utilSrc, rows: rows });
    return card;
  }

  function updateGpuCard(card, g) {
    var r = ref(card);
    var ordText = g.ordinal === null ? '?' : String(g.ordinal);
    setAttr(card, 'data-testid', 'gpu-' + ordText);
    setAttr(card, 'data-gpu', ordText);
    setText(r.ord, 'GPU ' + ordText);
    var info = g.info || {};
    setText(r.name, str(info.name) || '');
    var ids = [str(info.pci_bus_id), str(info.uuid)].filter(Boolean).join(' · ');
    setText(r.ident, ids);
    if (typeof info.lock_held === 'boolean') {
      setAttr(r.lock, 'data-held', info.lock_held);
      setText(r.lock, info.lock_held ? 'kernel lock held' : 'kernel lock free');
    } else {
      setAttr(r.lock, 'data-held', 'unknown');
      setText(r.lock, '');
    }

    var u, src;
    if (g.ordinal !== null && samples.length && samples[samples.length - 1].g.has(g.ordinal)) {
      u = rate('g', g.ordinal);
      src = 'lock';
    } else {
      var us = g.workers.map(function (w) { return rate('w', int(w.worker_id)); });
      if (us.length && us.every(function (x) { return x !== null; })) {
        src = 'workers';
        u = us.some(function (x) { return x === undefined; }) ? undefined
          : us.reduce(function (a, b) { return a + b; }, 0) / us.length;
      } else {
        src = 'none';
        u = null;
      }
    }
    setAttr(r.utilVal, 'data-util-source', src);
    setAttr(r.utilVal, 'data-util', typeof u === 'number' ? u.toFixed(4) : '');
    setText(r.utilVal, u === undefined ? '…' : fmtPct(u));
    setAttr(r.utilVal, 'data-level', typeof u === 'number' ? (u >= 0.7 ? 'high' : u >= 0.3 ? 'mid' : 'low') : 'none');
    setText(r.utilSrc, src === 'lock' ? 'GPU util · kernel lock, 5 s' : src === 'workers' ? 'GPU util · mean of workers, 5 s' : 'GPU util · not reported by source');
    setAttr(r.utilSrc, 'title', src === 'none' ? 'The source reports no cumulative busy-time counters (busy_total_secs), e.g. a real cuzk daemon' : 'Δ busy seconds / Δ uptime over the last ' + UTIL_WINDOW_SECS + ' s');

    reconcile(r.rows, g.workers, function (w, i) {
      var id = int(w.worker_id);
      return id === null ? 'i' + i : 'w' + id;
    }, createWorkerRow, updateWorkerRow);
  }

  function createWorkerRow() {
    var row = el('div', 'worker');
    var st = el('div', 'w-state', 'worker-state');
    var id = el('div', 'w-id num');
    var part = el('div', 'w-part');
    var partIdx = el('span', 'w-part-idx num', 'worker-partition');
    var kind = el('span', 'w-kind', 'worker-kind');
    part.appendChild(partIdx);
    part.appendChild(kind);
    var job = el('div', 'w-job mono', 'worker-job');
    var busy = el('div', 'w-busy num', 'worker-busy');
    var util = el('div', 'w-util num', 'worker-util');
    [st, id, part, job, busy, util].forEach(function (c) { row.appendChild(c); });
    refs.set(row, { st: st, id: id, partIdx: partIdx, kind: kind, job: job, busy: busy, util: util });
    return row;
  }

  function updateWorkerRow(row, w, i) {
    var r = ref(row);
    var id = int(w.worker_id);
    var idText = id === null ? '?' + i : String(id);
    setAttr(row, 'data-testid', 'worker-' + idText);
    setAttr(row, 'data-worker-id', idText);
    setAttr(row, 'data-gpu', int(w.gpu_ordinal) === null ? '' : int(w.gpu_ordinal));
    var s = str(w.state) || 'unknown';
    setAttr(row, 'data-state', s);
    var proving = s === 'proving';
    setText(r.st, s.toUpperCase());
    setText(r.id, 'W' + idText);
    var p = int(w.current_partition);
    setText(r.partIdx, p === null ? '—' : 'P' + p);
    setText(r.kind, str(w.current_kind) || '');
    var job = str(w.current_job);
    setText(r.job, job === null ? '—' : job);
    setAttr(r.job, 'data-empty', job === null);
    var busy = num(w.busy_secs);
    setText(r.busy, proving || busy !== null ? fmtSecs(busy) : '—');
    var u = id === null ? null : rate('w', id);
    setAttr(r.util, 'data-util', typeof u === 'number' ? u.toFixed(4) : '');
    setText(r.util, u === undefined ? '…' : fmtPct(u));
  }

  function renderGpus(snap) {
    var groups = gpuGroups(snap);
    reconcile($('gpu-list'), groups, function (g) { return 'g' + String(g.key); }, createGpuCard, updateGpuCard);
    setActive($('gpus-empty'), groups.length === 0);
  }

  // ── pipelines ─────────────────────────────────────────────────────────────────────────

  function createPipeline() {
    var card = el('article', 'pipeline', 'pipeline');
    var head = el('div', 'pl-head');
    var kind = el('span', 'kind-badge', 'pipeline-kind');
    var job = el('span', 'pl-job mono', 'pipeline-job-id');
    var stats = el('div', 'pl-stats');
    var outcome = el('span', 'outcome', 'pipeline-outcome');
    var progress = el('span', 'pl-progress num', 'pipeline-progress');
    var age = el('span', 'pl-age num', 'pipeline-age');
    var prio = el('span', 'pl-prio num', 'pipeline-priority');
    [outcome, progress, age, prio].forEach(function (c) { stats.appendChild(c); });
    var idWrap = el('div', 'pl-idwrap');
    idWrap.appendChild(kind);
    idWrap.appendChild(job);
    head.appendChild(idWrap);
    head.appendChild(stats);
    card.appendChild(head);
    var bar = el('div', 'pl-bar');
    bar.setAttribute('aria-hidden', 'true');
    var segs = {};
    BAR_ORDER.forEach(function (s) {
      var seg = el('span', 'seg st-' + s);
      segs[s] = seg;
      bar.appendChild(seg);
    });
    card.appendChild(bar);
    var cells = el('div', 'cells');
    card.appendChild(cells);
    refs.set(card, { kind: kind, job: job, outcome: outcome, progress: progress, age: age, prio: prio, segs: segs, bar: bar, cells: cells });
    return card;
  }

  function updatePipeline(card, p, i, mm) {
    var r = ref(card);
    var job = str(p.job_id);
    setAttr(card, 'data-job-id', job === null ? '' : job);
    var kind = str(p.proof_kind) || 'unknown';
    setAttr(card, 'data-kind', kind);
    setText(r.kind, kind);
    setText(r.job, job === null ? '(no job id)' : job);
    var outcome = str(p.outcome);
    setAttr(card, 'data-outcome', outcome || '');
    setAttr(r.outcome, 'data-outcome', outcome || '');
    setText(r.outcome, outcome || '');
    var done = int(p.partitions_done), total = int(p.total_partitions);
    setText(r.progress, fmtInt(done) + ' / ' + fmtInt(total) + ' done');
    var fin = num(p.finished_secs_ago);
    setText(r.age, fin !== null ? 'finished ' + fmtSecs(fin) + ' ago' : 'started ' + fmtSecs(num(p.started_secs_ago)) + ' ago');
    var prio = int(p.priority);
    setText(r.prio, prio === null ? '' : 'priority ' + prio);

    var parts = arr(p.partitions).filter(isObj);
    var counts = {};
    parts.forEach(function (x) { counts[x.state] = (counts[x.state] || 0) + 1; });
    var n = Math.max(parts.length, total || 0, 1);
    PARTITION_STATES.forEach(function (s) {
      var w = ((counts[s] || 0) / n * 100).toFixed(3) + '%';
      if (r.segs[s].style.width !== w) r.segs[s].style.width = w;
    });
    setAttr(r.bar, 'title', PARTITION_STATES.filter(function (s) { return counts[s]; })
      .map(function (s) { return counts[s] + ' ' + s; }).join(' · '));

    reconcile(r.cells, parts, function (x, j) {
      var idx = int(x.index);
      return idx === null ? 'i' + j : 'p' + idx;
    }, createCell, function (cell, part) { updateCell(cell, part, job, mm); });
  }

  function createCell() {
    var cell = el('div', 'cell', 'partition-cell');
    var top = el('div', 'c-top');
    var idx = el('span', 'c-idx num');
    var st = el('span', 'c-state', 'partition-state');
    top.appendChild(idx);
    top.appendChild(st);
    var synth = el('div', 'c-t num', 'partition-synth');
    var gpu = el('div', 'c-t num', 'partition-gpu');
    cell.appendChild(top);
    cell.appendChild(synth);
    cell.appendChild(gpu);
    refs.set(cell, { idx: idx, st: st, synth: synth, gpu: gpu });
    return cell;
  }

  function updateCell(cell, part, job, mm) {
    var r = ref(cell);
    var idx = int(part.index);
    var s = str(part.state) || 'unknown';
    var known = PARTITION_STATES.indexOf(s) >= 0;
    setAttr(cell, 'data-state', s);
    setAttr(cell, 'data-index', idx === null ? '' : idx);
    setAttr(cell, 'class', 'cell st-' + (known ? s : 'unknown'));
    var orphan = s === 'gpu' && mm.orphans.has(pkey(job, idx));
    var finalizing = s === 'gpu' && mm.finalizing.has(pkey(job, idx));
    setAttr(cell, 'data-orphan', orphan);
    setAttr(cell, 'data-finalizing', finalizing);
    setText(r.idx, (orphan ? '! ' : '') + 'P' + (idx === null ? '?' : idx));
    setText(r.st, known ? STATE_LABEL[s] : s);
    var sm = num(part.synth_ms), gm = num(part.gpu_ms);
    setText(r.synth, 'S ' + fmtMs(sm));
    setText(r.gpu, 'G ' + fmtMs(gm));
    var w = int(part.worker_id);
    var title = 'Partition ' + (idx === null ? '?' : idx) + ': ' + s +
      '\nsynthesis ' + fmtMs(sm) + ', GPU ' + fmtMs(gm) +
      (w !== null ? '\nworker W' + w : '') +
      (orphan ? '\nIn the gpu state but no proving worker reports this partition' : '') +
      (finalizing ? '\nFinalizing: kernels done, CPU epilogue running while its worker proves its next partition (split proving)' : '');
    setAttr(cell, 'title', title);
  }

  function renderPipelines(snap, mm) {
    var list = arr(snap.pipelines).filter(isObj);
    reconcile($('pipeline-list'), list, function (p, i) {
      var j = str(p.job_id);
      return j === null ? '\u0000i' + i : 'j' + j;
    }, createPipeline, function (card, p, i) { updatePipeline(card, p, i, mm); });
    setActive($('pipelines-empty'), list.length === 0);
    var running = list.filter(function (p) { return num(p.finished_secs_ago) === null && p.outcome !== 'completed' && p.outcome !== 'failed' && p.outcome !== 'cancelled'; }).length;
    setText($('pipelines-count'), list.length ? plural(list.length, 'job', 'jobs') + (running !== list.length ? ' · ' + running + ' running' : '') : '');
  }

  // ── resources, counters, allocations ──────────────────────────────────────────────────

  function renderMemory(snap) {
    var m = obj(snap.memory);
    var total = num(m.total_bytes), used = num(m.used_bytes), avail = num(m.available_bytes);
    var f = total && used !== null ? Math.max(0, Math.min(1, used / total)) : null;
    var fill = $('memory-bar-fill');
    var w = f === null ? '0%' : (f * 100).toFixed(2) + '%';
    if (fill.style.width !== w) fill.style.width = w;
    setAttr(fill, 'data-level', f === null ? 'none' : f >= 0.9 ? 'high' : f >= 0.75 ? 'mid' : 'low');
    setAttr($('memory-bar'), 'aria-valuenow', f === null ? 0 : Math.round(f * 100));
    setText($('memory-pct'), f === null ? '—' : fmtPct(f));
    setText($('memory-used'), fmtBytes(used));
    setText($('memory-available'), fmtBytes(avail));
    setText($('memory-total'), fmtBytes(total));
  }

  function renderSynthesis(snap) {
    var s = obj(snap.synthesis);
    var active = int(s.active), max = int(s.max_concurrent);
    setText($('synthesis-slots'), fmtInt(active) + ' / ' + fmtInt(max));
    var pips = $('synthesis-pips');
    var count = max !== null && max > 0 ? Math.min(max, 32) : 0;
    var items = [];
    for (var i = 0; i < count; i++) items.push(i);
    reconcile(pips, items, function (x) { return 'p' + x; }, function () { return el('span', 'pip'); }, function (pip, x) {
      setAttr(pip, 'data-on', active !== null && x < active);
    });
  }

  function renderQueue(snap) {
    var c = obj(snap.counters);
    setText($('queue-depth'), fmtInt(int(c.queue_depth)));
    var byKind = obj(c.queue_depth_by_kind);
    var parts = sortKinds(Object.keys(byKind)).filter(function (k) { return int(byKind[k]); })
      .map(function (k) { return k + ' ' + int(byKind[k]); });
    setText($('queue-kinds'), parts.join(' · '));
  }

  function renderBuffers(snap) {
    var b = obj(snap.buffers);
    var keys = BUFFER_ORDER.filter(function (k) { return k in b; })
      .concat(Object.keys(b).filter(function (k) { return BUFFER_ORDER.indexOf(k) < 0 && num(b[k]) !== null; }).sort());
    reconcile($('buffers-list'), keys, function (k) { return k; }, function () {
      var d = el('div', 'kv-item');
      var dt = el('dt', 'mono');
      var dd = el('dd', 'num');
      d.appendChild(dt);
      d.appendChild(dd);
      refs.set(d, { dt: dt, dd: dd });
      return d;
    }, function (d, k) {
      var r = ref(d);
      setText(r.dt, k);
      setAttr(r.dd, 'data-testid', 'buffer-' + k);
      setAttr(r.dd, 'data-key', k);
      setText(r.dd, fmtInt(int(b[k])));
    });
  }

  function sortKinds(keys) {
    return keys.slice().sort(function (a, b) {
      var ia = KIND_ORDER.indexOf(a), ib = KIND_ORDER.indexOf(b);
      if (ia < 0) ia = 99;
      if (ib < 0) ib = 99;
      return ia !== ib ? ia - ib : a < b ? -1 : a > b ? 1 : 0;
    });
  }

  function renderCounters(snap) {
    var c = obj(snap.counters);
    var comp = obj(c.completed_by_kind), fail = obj(c.failed_by_kind);
    var hasCancel = isObj(c.cancelled_by_kind), hasQueue = isObj(c.queue_depth_by_kind);
    var canc = obj(c.cancelled_by_kind), queue = obj(c.queue_depth_by_kind);
    var kinds = new Set();
    [comp, fail, canc, queue].forEach(function (o) { Object.keys(o).forEach(function (k) { kinds.add(k); }); });
    var list = sortKinds(Array.from(kinds));
    reconcile($('counters-body'), list, function (k) { return k; }, function () {
      var tr = el('tr', '', 'counter-row');
      var th = el('th', 'mono', 'counter-kind');
      th.setAttribute('scope', 'row');
      var tds = ['completed', 'failed', 'cancelled', 'queued'].map(function (n) {
        var td = el('td', 'r num c-' + n, 'counter-' + n);
        return td;
      });
      tr.appendChild(th);
      tds.forEach(function (td) { tr.appendChild(td); });
      refs.set(tr, { th: th, tds: tds });
      return tr;
    }, function (tr, k) {
      var r = ref(tr);
      setAttr(tr, 'data-kind', k);
      setText(r.th, k);
      setText(r.tds[0], fmtInt(int(comp[k]) || 0));
      var f = int(fail[k]) || 0;
      setText(r.tds[1], fmtInt(f));
      setAttr(r.tds[1], 'data-nonzero', f > 0);
      setText(r.tds[2], hasCancel ? fmtInt(int(canc[k]) || 0) : '—');
      setText(r.tds[3], hasQueue ? fmtInt(int(queue[k]) || 0) : '—');
    });
    var sum = function (o) { return Object.keys(o).reduce(function (a, k) { return a + (int(o[k]) || 0); }, 0); };
    var tc = int(c.total_completed), tf = int(c.total_failed);
    setText($('counter-total-completed'), fmtInt(tc !== null ? tc : sum(comp)));
    setText($('counter-total-failed'), fmtInt(tf !== null ? tf : sum(fail)));
    setAttr($('counter-total-failed'), 'data-nonzero', (tf !== null ? tf : sum(fail)) > 0);
    setText($('counter-total-cancelled'), hasCancel ? fmtInt(sum(canc)) : '—');
    setText($('counter-total-queued'), fmtInt(int(c.queue_depth)));
  }

  function renderAllocations(snap) {
    var a = obj(snap.allocations);
    var rows = [];
    ['srs', 'pce'].forEach(function (t) {
      arr(a[t]).filter(isObj).forEach(function (x) { rows.push({ table: t, x: x }); });
    });
    var total = 0;
    rows.forEach(function (r) { total += num(r.x.bytes) || 0; });
    reconcile($('alloc-body'), rows, function (r, i) { return r.table + '\u0000' + (str(r.x.circuit_id) || '#' + i); }, function () {
      var tr = el('tr', '', 'alloc-row');
      var cells = ['alloc-table', 'alloc-circuit', 'alloc-bytes', 'alloc-last-used', 'alloc-evictable'].map(function (t, j) {
        return el('td', j === 1 ? 'mono' : j === 2 || j === 3 ? 'r num' : '', t);
      });
      cells.forEach(function (c) { tr.appendChild(c); });
      refs.set(tr, cells);
      return tr;
    }, function (tr, r) {
      var c = ref(tr);
      var circuit = str(r.x.circuit_id);
      setAttr(tr, 'data-table', r.table);
      setAttr(tr, 'data-circuit', circuit || '');
      setText(c[0], r.table.toUpperCase());
      setText(c[1], circuit || '—');
      setText(c[2], fmtBytes(num(r.x.bytes)));
      var lu = num(r.x.last_used_secs_ago);
      setText(c[3], lu === null ? '—' : fmtSecs(lu) + ' ago');
      setText(c[4], r.x.evictable === true ? 'yes' : r.x.evictable === false ? 'no (in use)' : '—');
      setAttr(c[4], 'data-evictable', r.x.evictable === true);
    });
    setText($('alloc-total'), rows.length ? fmtBytes(total) : '');
    setActive($('alloc-empty'), rows.length === 0);
  }

  // ── main loop ─────────────────────────────────────────────────────────────────────────

  function render(snap) {
    var mm = computeMismatch(snap);
    state.mismatch = mm;
    renderHeader(snap);
    renderMismatch(mm);
    renderGpus(snap);
    renderPipelines(snap, mm);
    renderMemory(snap);
    renderSynthesis(snap);
    renderQueue(snap);
    renderBuffers(snap);
    renderCounters(snap);
    renderAllocations(snap);
  }

  function onSnapshot(snap) {
    state.snap = snap;
    state.okAt = performance.now();
    state.okWall = new Date();
    state.fetchError = null;
    addSample(snap);
    try {
      render(snap);
    } catch (e) {
      // A malformed snapshot must not stop the page; show it like a failed poll.
      state.fetchError = 'cannot render snapshot: ' + (e && e.message ? e.message : String(e));
    }
    state.updates++;
    setAttr(app, 'data-update-count', state.updates);
    setText($('updated-at'), 'last update ' + fmtClock(state.okWall));
  }

  function errorText(err, timedOut) {
    if (timedOut) return 'timed out after ' + FETCH_TIMEOUT_MS / 1000 + ' s';
    var m = err && err.message ? err.message : String(err);
    return m === 'Failed to fetch' ? 'connection failed' : m;
  }

  function poll() {
    var started = performance.now();
    var ctrl = typeof AbortController === 'function' ? new AbortController() : null;
    var timedOut = false;
    var timer = setTimeout(function () { timedOut = true; if (ctrl) ctrl.abort(); }, FETCH_TIMEOUT_MS);
    fetch(STATUS_URL, { cache: 'no-store', headers: { Accept: 'application/json' }, signal: ctrl ? ctrl.signal : undefined })
      .then(function (res) {
        return res.text().then(function (text) {
          var body = null;
          try { body = JSON.parse(text); } catch (e) { body = null; }
          if (!res.ok && !(isObj(body) && isObj(body.exporter))) throw new Error('HTTP ' + res.status);
          if (!isObj(body)) throw new Error('/status did not return a JSON object');
          onSnapshot(body);
        });
      })
      .catch(function (err) {
        state.fetchError = errorText(err, timedOut);
      })
      .then(function () {
        clearTimeout(timer);
        renderConn();
        setTimeout(poll, Math.max(0, POLL_MS - (performance.now() - started)));
      });
  }

  renderConn();
  poll();
})();
