/**
 * The prom-client equivalent of our exporter, for side-by-side scrape cost: a Registry
 * with the same series (names, label names and values, HELP text) as
 * src/exporter/state-metrics.ts and histograms.ts, filled the way a prom-client exporter
 * would be: gauges and counters set from the same StateModel in collect() callbacks at
 * each scrape, histograms observed when partitions/proofs finish (a tee on the model's
 * observer, so both see the same observations). Serialised with register.metrics().
 *
 * verifySameSeries() checks the claim: both bodies parse to the same set of samples.
 */
import * as client from 'prom-client';
import { KIND_LABELS, LIVE_PARTITION_STATES, LIVE_STATE_NAMES, MISMATCH_REASONS, OTHER_KIND_INDEX, OUTCOME_COMPLETED, PROOF_KINDS } from '../../src/engine/model/kinds';
import type { ModelObserver, StateModel } from '../../src/engine/model/state-model';
import { BUCKETS } from '../../src/exporter/histograms';
import type { SourceInfo } from '../../src/exporter/state-metrics';
import { parseSamples } from './stats';

const NS_PER_S = 1e9;

/** HELP texts by metric name, parsed from one of our /metrics bodies (so they match exactly). */
export function helpTexts(body: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of body.matchAll(/^# HELP (\S+) (.*)$/gm)) out.set(m[1], m[2].replace(/\\n/g, '\n').replace(/\\\\/g, '\\'));
  return out;
}

/**
 * `openMetrics`: an OpenMetrics registry whose four duration histograms carry exemplars
 * ({job_id, partition} from `jobId`, as ours do), for the OpenMetrics side of the
 * exposition benchmark; default the text 0.0.4 registry.
 */
export interface PromEquivalentOptions {
  openMetrics?: boolean;
  jobId?: (handle: number) => string | undefined;
}

export class PromEquivalent {
  readonly registry: client.Registry;
  private lastCollectSeconds = 0;

  constructor(
    model: StateModel,
    info: SourceInfo,
    private readonly nowNs: () => number,
    help: Map<string, string>,
    opts: PromEquivalentOptions = {},
  ) {
    this.registry = new client.Registry();
    if (opts.openMetrics) (this.registry as unknown as client.Registry<client.OpenMetricsContentType>).setContentType(client.Registry.OPENMETRICS_CONTENT_TYPE);
    const m = model;
    const reg = [this.registry];
    const h = (name: string) => help.get(name) ?? name;
    const self = this;
    const workerLabels = () => m.topology.workers.map((w) => ({ gpu: String(w.gpu), worker: String(w.id) }));
    const gpuLabels = () => m.topology.gpus.map((g) => ({ gpu: String(g.ordinal) }));
    // Per-topology label objects, rebuilt only when the topology changes (as ours are).
    let labelsVersion = -1;
    let wl: Record<string, string>[] = [];
    let gl: Record<string, string>[] = [];
    const topo = () => {
      if (labelsVersion !== m.topologyVersion) {
        wl = workerLabels();
        gl = gpuLabels();
        labelsVersion = m.topologyVersion;
      }
    };
    const kinds = (): number[] => {
      const ks = PROOF_KINDS.map((_, i) => i);
      if (kindUsed(m, OTHER_KIND_INDEX)) ks.push(OTHER_KIND_INDEX);
      return ks;
    };
    const kindLabel = KIND_LABELS.map((k) => ({ proof_kind: k }));
    const kindState = KIND_LABELS.map((k) => LIVE_STATE_NAMES.map((s) => ({ proof_kind: k, state: s })));

    const gauge = (name: string, labelNames: string[], fill: (g: client.Gauge) => void) =>
      new client.Gauge({ name, help: h(name), labelNames, registers: reg, collect() { if (labelNames.length > 0) this.reset(); fill(this); } });
    const counter = (name: string, labelNames: string[], fill: (c: client.Counter) => void) =>
      new client.Counter({ name, help: h(name), labelNames, registers: reg, collect() { this.reset(); fill(this); } });
    const perWorkerGauge = (name: string, f: (w: number, now: number) => number) =>
      gauge(name, ['gpu', 'worker'], (g) => {
        topo();
        const now = self.nowNs();
        for (let w = 0; w < wl.length; w++) g.set(wl[w], f(w, now));
      });
    const perWorkerCounter = (name: string, f: (w: number, now: number) => number) =>
      counter(name, ['gpu', 'worker'], (c) => {
        topo();
        const now = self.nowNs();
        for (let w = 0; w < wl.length; w++) c.inc(wl[w], f(w, now));
      });
    const perGpuCounter = (name: string, f: (g: number, now: number) => number) =>
      counter(name, ['gpu'], (c) => {
        if (!m.topology.lockEvents) return;
        topo();
        const now = self.nowNs();
        for (let g = 0; g < gl.length; g++) c.inc(gl[g], f(g, now));
      });
    const perKindCounter = (name: string, arr: () => ArrayLike<number>, div = 1) =>
      counter(name, ['proof_kind'], (c) => {
        const a = arr();
        for (const k of kinds()) c.inc(kindLabel[k], a[k] / div);
      });

    gauge('cuzk_up', [], (g) => g.set(m.up ? 1 : 0));
    // The run-mode source's one surface (state-metrics.ts: sources without surfaces() report "engine").
    gauge('cuzk_surface_up', ['surface'], (g) => g.set({ surface: 'engine' }, m.up ? 1 : 0));
    gauge('cuzk_exporter_build_info', ['version', 'source', 'backend', 'surfaces'], (g) => g.set({ version: info.version, source: info.source, backend: info.backend, surfaces: 'engine' }, 1));
    gauge('cuzk_gpu_info', ['gpu', 'name', 'uuid', 'pci_bus_id'], (g) => {
      for (const x of m.topology.gpus) {
        const l: Record<string, string> = { gpu: String(x.ordinal), name: x.name };
        if (x.uuid) l.uuid = x.uuid;
        if (x.pciBusId) l.pci_bus_id = x.pciBusId;
        g.set(l, 1);
      }
    });
    perWorkerGauge('cuzk_gpu_worker_busy', (w) => m.wBusy[w]);
    perWorkerCounter('cuzk_gpu_worker_busy_seconds_total', (w, now) => m.workerBusyNsAt(w, now) / NS_PER_S);
    perWorkerCounter('cuzk_gpu_worker_partitions_total', (w) => m.wPartitions[w]);
    perWorkerGauge('cuzk_gpu_worker_current_partition_seconds', (w, now) => m.workerStintSecondsAt(w, now));
    perGpuCounter('cuzk_gpu_busy_seconds_total', (g, now) => m.gpuLockHeldNsAt(g, now) / NS_PER_S);
    perGpuCounter('cuzk_gpu_starved_seconds_total', (g, now) => m.gpuStarvedNsAt(g, now) / NS_PER_S);
    gauge('cuzk_partitions', ['proof_kind', 'state'], (g) => {
      for (const k of kinds()) for (let s = 0; s < LIVE_PARTITION_STATES; s++) g.set(kindState[k][s], m.kLive[k * LIVE_PARTITION_STATES + s]);
    });
    perKindCounter('cuzk_partition_gpu_seconds_total', () => m.kGpuNs, NS_PER_S);
    if (m.topology.lockEvents) perKindCounter('cuzk_partition_finalize_seconds_total', () => m.kFinalizeNs, NS_PER_S);
    perKindCounter('cuzk_partition_synthesis_seconds_total', () => m.kSynthNs, NS_PER_S);
    perKindCounter('cuzk_partitions_completed_total', () => m.kPartsCompleted);
    perKindCounter('cuzk_partitions_failed_total', () => m.kPartsFailed);
    perKindCounter('cuzk_proofs_completed_total', () => m.kProofsCompleted);
    perKindCounter('cuzk_proofs_failed_total', () => m.kProofsFailed);
    perKindCounter('cuzk_proofs_cancelled_total', () => m.kProofsCancelled);
    gauge('cuzk_queue_depth', ['proof_kind'], (g) => {
      for (const k of kinds()) g.set(kindLabel[k], m.kQueueDepth[k]);
    });
    gauge('cuzk_synthesis_active', [], (g) => g.set(m.synthActive));
    gauge('cuzk_synthesis_max_concurrent', [], (g) => g.set(m.synthMax));
    gauge('cuzk_memory_budget_bytes', [], (g) => g.set(m.memoryBudgetBytes));
    gauge('cuzk_memory_used_bytes', [], (g) => g.set(m.memoryUsedBytes));
    gauge('cuzk_status_mismatch', [], (g) => g.set(m.statusMismatch() ? 1 : 0));
    gauge('cuzk_status_mismatch_reason', ['reason'], (g) => MISMATCH_REASONS.forEach((reason, r) => g.set({ reason }, m.mismatchReason(r) ? 1 : 0)));
    counter('cuzk_exporter_events_total', [], (c) => c.inc(m.eventsTotal));
    counter('cuzk_exporter_events_dropped_total', [], (c) => c.inc(m.eventsDropped));
    counter('cuzk_exporter_errors_total', ['reason'], (c) => {
      for (const [reason, n] of m.errors.entries()) c.inc({ reason }, n);
    });
    gauge('cuzk_exporter_scrape_duration_seconds', [], (g) => g.set(self.lastCollectSeconds));

    const exemplars = opts.openMetrics === true;
    const hist = (name: string, buckets: readonly number[], labelNames: string[], withExemplars = false) =>
      new client.Histogram({ name, help: h(name), labelNames, buckets: [...buckets], registers: reg, enableExemplars: exemplars && withExemplars });
    // Observe with an exemplar where ours has one (a known job id), as a prom-client exporter would.
    const observe = (hg: client.Histogram, labels: Record<string, string>, value: number, job?: number, partition?: number) => {
      const id = exemplars && job !== undefined ? opts.jobId?.(job) : undefined;
      if (id === undefined) return hg.observe(labels, value);
      hg.observe({ labels, value, exemplarLabels: partition === undefined ? { job_id: id } : { job_id: id, partition: String(partition) } });
    };
    const gpuDuration = hist('cuzk_partition_gpu_duration_seconds', BUCKETS.partitionGpu, ['proof_kind'], true);
    const finalizeDuration = hist('cuzk_partition_finalize_duration_seconds', BUCKETS.partitionFinalize, ['proof_kind']);
    const synthDuration = hist('cuzk_partition_synthesis_duration_seconds', BUCKETS.partitionSynthesis, ['proof_kind'], true);
    const proofDuration = hist('cuzk_proof_duration_seconds', BUCKETS.proof, ['proof_kind'], true);
    const queueWait = hist('cuzk_proof_queue_wait_seconds', BUCKETS.queueWait, ['proof_kind'], true);
    const idleGap = hist('cuzk_gpu_idle_gap_seconds', BUCKETS.gpuIdleGap, ['gpu']);
    const theirs = model.observer;
    const ours: ModelObserver = {
      partitionGpu: (k, s, job, p) => observe(gpuDuration, kindLabel[k], s, job, p),
      partitionFinalize: (k, s) => finalizeDuration.observe(kindLabel[k], s),
      partitionSynthesis: (k, s, job, p) => observe(synthDuration, kindLabel[k], s, job, p),
      proofDone: (k, outcome, s, job) => {
        if (outcome === OUTCOME_COMPLETED) observe(proofDuration, kindLabel[k], s, job);
      },
      queueWait: (k, s, job) => observe(queueWait, kindLabel[k], s, job),
      gpuIdleGap: (g, s) => {
        const x = m.topology.gpus[g];
        if (x) idleGap.observe({ gpu: String(x.ordinal) }, s);
      },
    };
    // Tee: the OpenTelemetry histograms (already attached) and ours see every observation.
    model.observer = theirs
      ? {
          partitionGpu: (k, s, j, p) => (theirs.partitionGpu(k, s, j, p), ours.partitionGpu(k, s, j, p)),
          partitionFinalize: (k, s) => (theirs.partitionFinalize?.(k, s), ours.partitionFinalize?.(k, s)),
          partitionSynthesis: (k, s, j, p) => (theirs.partitionSynthesis(k, s, j, p), ours.partitionSynthesis(k, s, j, p)),
          proofDone: (k, o, s, j) => (theirs.proofDone(k, o, s, j), ours.proofDone(k, o, s, j)),
          queueWait: (k, s, j) => (theirs.queueWait(k, s, j), ours.queueWait(k, s, j)),
          gpuIdleGap: (g, s) => (theirs.gpuIdleGap(g, s), ours.gpuIdleGap(g, s)),
        }
      : ours;
  }

  /** One collection + serialisation, as a prom-client exporter's /metrics handler does. */
  async scrape(): Promise<string> {
    const t0 = process.hrtime.bigint();
    const body = await this.registry.metrics();
    this.lastCollectSeconds = Number(process.hrtime.bigint() - t0) / 1e9;
    return body;
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

function kindUsed(m: StateModel, k: number): boolean {
  if (m.kGpuNs[k] || m.kSynthNs[k] || m.kFinalizeNs[k] || m.kPartsCompleted[k] || m.kPartsFailed[k]) return true;
  if (m.kProofsCompleted[k] || m.kProofsFailed[k] || m.kProofsCancelled[k] || m.kQueueDepth[k]) return true;
  for (let s = 0; s < LIVE_PARTITION_STATES; s++) if (m.kLive[k * LIVE_PARTITION_STATES + s]) return true;
  return false;
}

/** Differences between two bodies' samples (ignoring the scrape-duration gauge), at most `max`. */
export function sampleDifferences(a: string, b: string, max = 5): string[] {
  const skip = (k: string) => k.startsWith('cuzk_exporter_scrape_duration_seconds');
  const A = parseSamples(a);
  const B = parseSamples(b);
  const out: string[] = [];
  for (const [k, v] of A) {
    if (skip(k)) continue;
    if (!B.has(k)) out.push(`only in ours: ${k}`);
    else if (B.get(k) !== v) out.push(`${k}: ours ${v}, prom-client ${B.get(k)}`);
    if (out.length >= max) return out;
  }
  for (const k of B.keys()) {
    if (!skip(k) && !A.has(k)) out.push(`only in prom-client: ${k}`);
    if (out.length >= max) return out;
  }
  return out;
}
