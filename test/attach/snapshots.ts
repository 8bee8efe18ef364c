/**
 * Builders for cuzk GET /status snapshots in the shape of the cuzk fixtures
 * (test/fixtures/cuzk-status, DESIGN §6), for scripted attach tests, and the fixtures themselves.
 */
import * as fs from 'node:fs';

import { FIXTURE_DIR, fixturePath } from '../helpers/fixtures';

export { FIXTURE_DIR, fixturePath };

/** A fixture's raw text (served byte for byte) and its parsed value. */
export function fixture(name: string): { text: string; json: Record<string, unknown> } {
  const text = fs.readFileSync(fixturePath(name), 'utf8');
  return { text, json: JSON.parse(text) as Record<string, unknown> };
}

export type PartState = 'pending' | 'synthesizing' | 'synth_done' | 'gpu' | 'done' | 'failed';

export interface Part {
  index: number;
  state: PartState;
  synth_ms: number | null;
  gpu_ms: number | null;
}

export interface Pipeline {
  job_id: string;
  proof_kind: string;
  started_secs_ago: number;
  total_partitions: number;
  partitions_done: number;
  partitions: Part[];
}

export interface Worker {
  worker_id: number;
  gpu_ordinal: number;
  state: 'idle' | 'proving';
  current_job: string | null;
  current_partition: number | null;
  busy_secs: number | null;
}

/** One partition: [state, synth_ms, gpu_ms]. */
export type PartSpec = [PartState, number | null, number | null];

export function pipeline(jobId: string, kind: string, parts: PartSpec[], startedSecsAgo = 10): Pipeline {
  const partitions = parts.map(([state, synth_ms, gpu_ms], index) => ({ index, state, synth_ms, gpu_ms }));
  return {
    job_id: jobId,
    proof_kind: kind,
    started_secs_ago: startedSecsAgo,
    total_partitions: partitions.length,
    partitions_done: partitions.filter((p) => p.state === 'done').length,
    partitions,
  };
}

export const idle = (id: number, gpu: number): Worker => ({
  worker_id: id,
  gpu_ordinal: gpu,
  state: 'idle',
  current_job: null,
  current_partition: null,
  busy_secs: null,
});

export const proving = (id: number, gpu: number, job: string, partition: number, busySecs: number): Worker => ({
  worker_id: id,
  gpu_ordinal: gpu,
  state: 'proving',
  current_job: job,
  current_partition: partition,
  busy_secs: busySecs,
});

export interface SnapshotSpec {
  uptime: number;
  pipelines?: Pipeline[];
  workers: Worker[];
  completed?: Record<string, number>;
  failed?: Record<string, number>;
  queueDepth?: number;
  memoryUsed?: number;
  synthActive?: number;
}

const sum = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);

/** A whole snapshot with every section cuzk writes. */
export function snapshot(s: SnapshotSpec): Record<string, unknown> {
  const completed = s.completed ?? {};
  const failed = s.failed ?? {};
  const total = 549755813888;
  const used = s.memoryUsed ?? 98784247808;
  return {
    uptime_secs: s.uptime,
    memory: { total_bytes: total, used_bytes: used, available_bytes: total - used },
    synthesis: { max_concurrent: 7, active: s.synthActive ?? 0 },
    pipelines: s.pipelines ?? [],
    gpu_workers: s.workers,
    allocations: { srs: [], pce: [] },
    counters: {
      total_completed: sum(completed),
      total_failed: sum(failed),
      completed_by_kind: completed,
      failed_by_kind: failed,
      queue_depth: s.queueDepth ?? 0,
    },
    buffers: { synth_in_flight: 0, provers_in_flight: 0, aux_in_flight: 0, shells_in_flight: 0, pending_handles: 0 },
  };
}
