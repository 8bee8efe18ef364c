/**
 * A stand-in for cuzk's gRPC ProvingEngine in tests: a real @grpc/grpc-js server with our
 * proto (real library, real sockets: unix or TCP), whose GetMetrics / GetStatus answers the
 * test sets — a cuzk-like answer, an error, a hang past the client's deadline, bytes that
 * are not the message, or a huge one.
 */
import * as fs from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { provingEngineService } from '../../src/engine/sources/attach/grpc-wire';

export type Behaviour = 'ok' | 'hang' | 'error' | 'garbage';

export interface WorkerSpec {
  ordinal: number;
  job?: string;
  kind?: string;
  name?: string;
}

/** cuzk's GetMetrics text (service.rs get_metrics), kinds as it spells them there. */
export function cuzkMetricsText(o: { uptime: number; completed: Record<string, number>; failed?: Record<string, number>; queue?: number; workers?: number }): string {
  const failed = o.failed ?? {};
  const total = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
  let t = '';
  t += '# HELP cuzk_proofs_completed_total Total proofs completed\n# TYPE cuzk_proofs_completed_total counter\n';
  t += `cuzk_proofs_completed_total ${total(o.completed)}\n`;
  t += '# HELP cuzk_proofs_failed_total Total proofs failed\n# TYPE cuzk_proofs_failed_total counter\n';
  t += `cuzk_proofs_failed_total ${total(failed)}\n`;
  t += '# HELP cuzk_uptime_seconds Daemon uptime\n# TYPE cuzk_uptime_seconds gauge\n';
  t += `cuzk_uptime_seconds ${o.uptime}\n`;
  t += '# HELP cuzk_queue_depth Current queue depth\n# TYPE cuzk_queue_depth gauge\n';
  t += `cuzk_queue_depth ${o.queue ?? 0}\n`;
  t += '# HELP cuzk_proofs_completed Per proof-kind completions\n# TYPE cuzk_proofs_completed counter\n';
  for (const [k, n] of Object.entries(o.completed)) t += `cuzk_proofs_completed{proof_kind="${k}"} ${n}\n`;
  t += '# HELP cuzk_proofs_failed Per proof-kind failures\n# TYPE cuzk_proofs_failed counter\n';
  for (const [k, n] of Object.entries(failed)) t += `cuzk_proofs_failed{proof_kind="${k}"} ${n}\n`;
  t += '# HELP cuzk_proof_duration_seconds Proof duration\n# TYPE cuzk_proof_duration_seconds summary\n';
  t += 'cuzk_proof_duration_seconds_count{proof_kind="porep_c2"} 3\ncuzk_proof_duration_seconds_sum{proof_kind="porep_c2"} 321.500\n';
  t += '# HELP cuzk_running_jobs Currently running proofs\n# TYPE cuzk_running_jobs gauge\ncuzk_running_jobs 1\n';
  t += `# HELP cuzk_gpu_workers Number of GPU workers\n# TYPE cuzk_gpu_workers gauge\ncuzk_gpu_workers ${o.workers ?? 2}\n`;
  return t;
}

export class FakeCuzkGrpc {
  metrics: Behaviour = 'ok';
  status: Behaviour = 'ok';
  metricsText = cuzkMetricsText({ uptime: 10, completed: {} });
  workers: WorkerSpec[] = [{ ordinal: 0 }, { ordinal: 0 }];
  queues: { proof_kind: string; pending: number; in_progress: number }[] = [];
  uptime = 10;
  totals = { completed: 0, failed: 0 };
  calls = { metrics: 0, status: 0 };
  private readonly hung: (() => void)[] = [];
  private server: grpc.Server | null = null;

  private constructor(public address: string) {}

  /** Starts on `bind` (unix:///path or 127.0.0.1:0); the address to dial is in .address. */
  static async start(bind: string): Promise<FakeCuzkGrpc> {
    const f = new FakeCuzkGrpc(bind);
    await f.listen(bind);
    return f;
  }

  async listen(bind: string): Promise<void> {
    if (bind.startsWith('unix://')) fs.rmSync(bind.slice('unix://'.length), { force: true });
    const server = new grpc.Server({ 'grpc.max_send_message_length': 64 * 1024 * 1024 });
    const base = provingEngineService();
    // GetMetrics' and GetStatus' serializers can be made to write bytes that are no message.
    const def: Record<string, grpc.MethodDefinition<unknown, unknown>> = { ...base };
    for (const m of ['GetMetrics', 'GetStatus'] as const) {
      const orig = base[m];
      def[m] = {
        ...orig,
        responseSerialize: (v: unknown) => (v instanceof Buffer ? v : orig.responseSerialize(v)),
      };
    }
    const unimplemented = (_c: unknown, cb: grpc.sendUnaryData<unknown>) => cb({ code: grpc.status.UNIMPLEMENTED, details: 'not in this stand-in' } as grpc.ServiceError, null);
    server.addService(def as grpc.ServiceDefinition, {
      GetMetrics: (_call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        this.calls.metrics++;
        this.answer(this.metrics, cb, () => ({ prometheus_text: this.metricsText }));
      },
      GetStatus: (_call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        this.calls.status++;
        this.answer(this.status, cb, () => ({
          gpus: this.workers.map((w) => ({
            ordinal: w.ordinal,
            name: w.name ?? `NVIDIA RTX 6000 Ada (${w.ordinal})`,
            vram_total_bytes: '51527024640',
            vram_free_bytes: '1000',
            current_job_id: w.job ?? '',
            current_proof_kind: w.job ? (w.kind ?? '') : '',
          })),
          loaded_srs: [],
          queues: this.queues,
          total_proofs_completed: String(this.totals.completed),
          total_proofs_failed: String(this.totals.failed),
          uptime_seconds: String(this.uptime),
          pinned_memory_bytes: '0',
          pinned_memory_limit_bytes: '0',
        }));
      },
      SubmitProof: unimplemented,
      AwaitProof: unimplemented,
      Prove: unimplemented,
      CancelProof: unimplemented,
      PreloadSRS: unimplemented,
      EvictSRS: unimplemented,
    });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(bind, grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
    );
    if (!bind.startsWith('unix:')) this.address = `127.0.0.1:${port}`;
    this.server = server;
  }

  private answer(b: Behaviour, cb: grpc.sendUnaryData<unknown>, body: () => unknown): void {
    switch (b) {
      case 'ok':
        return cb(null, body());
      case 'hang':
        this.hung.push(() => cb({ code: grpc.status.CANCELLED, details: 'released' } as grpc.ServiceError, null));
        return;
      case 'error':
        return cb({ code: grpc.status.INTERNAL, details: 'engine exploded' } as grpc.ServiceError, null);
      case 'garbage':
        // Not a message: a field 1 of wire type 7 (none such) and stray bytes.
        return cb(null, Buffer.from([0x0f, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02]));
    }
  }

  /** Stops listening (and drops every connection): the daemon is gone. */
  async stop(): Promise<void> {
    for (const r of this.hung.splice(0)) r();
    const s = this.server;
    this.server = null;
    if (!s) return;
    s.forceShutdown();
  }
}
