/**
 * A stand-in for cuzk-exporter's /metrics, built from the metric catalogue
 * (dashboards/src/metrics.ts): two GPUs with two workers each, every proof kind, counters that
 * grow with wall time. It lets the dashboard queries and the rules be checked against a real
 * Prometheus without the native engine. Healthy, it proves the split way (a partition of
 * every kind finalizing besides the ones in gpu: more partitions on the GPU than busy workers,
 * which must fire nothing). `setBug(true)` reproduces the historical status bug (partitions
 * in the gpu state while every worker reports idle).
 */
import * as http from 'http';
import { AddressInfo } from 'net';
import { METRICS, MISMATCH_REASONS, MetricDef, PARTITION_STATES, PROOF_KINDS } from '../../dashboards/src/metrics';

const GPUS = ['0', '1'];
const WORKERS = ['0', '1'];
const BUCKETS = [0.05, 0.1, 0.5, 1, 5, 30, 120, 600];

/** Metrics a healthy exporter may legitimately not expose yet (no series until the first error). */
export const OMITTED_WHEN_HEALTHY = new Set(['cuzk_exporter_errors_total']);

export interface FakeExporter {
  /** host:port */
  target: string;
  setBug(on: boolean): void;
  scrapes(): number;
  close(): Promise<void>;
}

type Labels = Record<string, string>;

function fmt(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`);
  return parts.length ? `{${parts.join(',')}}` : '';
}

function labelSets(m: MetricDef): Labels[] {
  const has = (l: string): boolean => m.labels.includes(l);
  if (m.name === 'cuzk_gpu_info') {
    return GPUS.map((gpu) => ({ gpu, name: 'Fake GPU "test" 24GB', uuid: `GPU-0000000${gpu}`, pci_bus_id: `0000:0${gpu}:00.0` }));
  }
  if (m.name === 'cuzk_exporter_build_info') return [{ version: '0.1.0', source: 'fake', backend: 'sim', surfaces: 'engine' }];
  if (m.name === 'cuzk_surface_up') return [{ surface: 'engine' }];
  if (has('gpu') && has('worker')) return GPUS.flatMap((gpu) => WORKERS.map((worker) => ({ gpu, worker })));
  if (has('gpu')) return GPUS.map((gpu) => ({ gpu }));
  if (has('proof_kind') && has('state')) return PROOF_KINDS.flatMap((proof_kind) => PARTITION_STATES.map((state) => ({ proof_kind, state })));
  if (has('proof_kind')) return PROOF_KINDS.map((proof_kind) => ({ proof_kind }));
  if (m.name === 'cuzk_status_mismatch_reason') return MISMATCH_REASONS.map((reason) => ({ reason }));
  if (has('reason')) return [{ reason: 'parse' }];
  return [{}];
}

/** The value of a non-histogram series at elapsed time t (seconds), consistent across metrics. */
function value(m: MetricDef, l: Labels, t: number, bug: boolean): number {
  const busy = (gpu: string, worker: string): number => (bug ? 0 : (Math.floor(t) + Number(gpu) + Number(worker)) % 2);
  switch (m.name) {
    case 'cuzk_gpu_worker_busy':
      return busy(l.gpu as string, l.worker as string);
    case 'cuzk_partitions':
      // Partitions on the GPU = busy workers (one per busy worker, all snap-update), unless the bug is on.
      if (l.state === 'gpu') {
        if (l.proof_kind !== 'snap-update') return 0;
        if (bug) return 2;
        return GPUS.reduce((s, g) => s + WORKERS.reduce((s2, w) => s2 + busy(g, w), 0), 0);
      }
      return 1;
    case 'cuzk_status_mismatch':
      return bug ? 1 : 0;
    case 'cuzk_status_mismatch_reason':
      return bug && l.reason === 'idle_with_partitions_on_gpu' ? 1 : 0;
    case 'cuzk_up':
    case 'cuzk_surface_up':
    case 'cuzk_exporter_build_info':
    case 'cuzk_gpu_info':
      return 1;
    case 'cuzk_gpu_worker_current_partition_seconds':
      return busy(l.gpu as string, l.worker as string) ? t % 1 : 0;
    case 'cuzk_synthesis_max_concurrent':
      return 4;
    case 'cuzk_synthesis_active':
      return 2;
    case 'cuzk_memory_budget_bytes':
      return 64 * 2 ** 30;
    case 'cuzk_memory_used_bytes':
      return 40 * 2 ** 30;
    case 'cuzk_queue_depth':
      return 1;
    case 'cuzk_exporter_scrape_duration_seconds':
      return 0.002;
    case 'cuzk_proofs_failed_total':
    case 'cuzk_partitions_failed_total':
    case 'cuzk_exporter_events_dropped_total':
      return 0;
    default:
      if (m.type === 'counter') return (m.name.includes('seconds') ? 0.7 : 3) * t;
      throw new Error(`fake exporter has no value for gauge ${m.name}`);
  }
}

export function renderMetrics(t: number, bug: boolean): string {
  const out: string[] = [];
  for (const m of METRICS) {
    if (OMITTED_WHEN_HEALTHY.has(m.name)) continue;
    out.push(`# HELP ${m.name} ${m.help}`, `# TYPE ${m.name} ${m.type}`);
    for (const l of labelSets(m)) {
      if (m.type === 'histogram') {
        // One observation per 0.25 s, spread over the buckets.
        const count = Math.floor(t * 4);
        BUCKETS.forEach((le, i) => {
          out.push(`${m.name}_bucket${fmt({ ...l, le: String(le) })} ${Math.floor((count * (i + 1)) / BUCKETS.length)}`);
        });
        out.push(`${m.name}_bucket${fmt({ ...l, le: '+Inf' })} ${count}`);
        out.push(`${m.name}_sum${fmt(l)} ${count * 0.8}`, `${m.name}_count${fmt(l)} ${count}`);
      } else {
        out.push(`${m.name}${fmt(l)} ${value(m, l, t, bug)}`);
      }
    }
  }
  return out.join('\n') + '\n';
}

export async function startFakeExporter(): Promise<FakeExporter> {
  const t0 = Date.now();
  let bug = false;
  let scrapes = 0;
  const server = http.createServer((req, res) => {
    if (req.url === '/metrics') {
      scrapes++;
      res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8' });
      res.end(renderMetrics((Date.now() - t0) / 1000, bug));
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    target: `127.0.0.1:${port}`,
    setBug: (on) => {
      bug = on;
    },
    scrapes: () => scrapes,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
