/**
 * What simulate knows of each engine job beyond the engine's events: the upstream request(s)
 * it stands for (engine.rs `ProofRequest`: job id, kind, partition_index, sector and miner,
 * submitted_at) and how upstream would run it — partitioned (porep-c2 / snap-update, one
 * request) or monolithic (PoSt, or a batch of several requests: engine.rs process_batch's
 * "standard path", whose log lines carry only the first request's id).
 * Entries go when the renderer is done with the job.
 */
export interface SimRequest {
  /** request_id = job_id (service.rs proto_to_request). */
  id: string;
  /** Native kind index. */
  kind: number;
  /** SubmitProofRequest.partition_index (proto field 23; WindowPoSt). */
  partitionIndex: number;
  sectorNumber: number;
  minerId: number;
  /** Engine clock ns (engine.rs ProofRequest.submitted_at). */
  submittedAt: number;
}

export interface EngineJob {
  handle: number;
  /** One request, or a batch (first = the id on every line). */
  requests: SimRequest[];
  /** Rendered as upstream's monolithic path (PoSt kinds, batches). */
  monolithic: boolean;
}

/** cuzk proves WindowPoSt and WinningPoSt whole ("monolithic"), never as a partitioned pipeline. */
export const MONOLITHIC_KINDS: ReadonlySet<string> = new Set(['window-post', 'winning-post']);
export const WINDOW_POST = 2;
export const isMonolithicKind = (kind: number): boolean => kind === 2 || kind === 3;

export class RequestRegistry {
  private readonly jobs = new Map<number, EngineJob>();

  register(job: EngineJob): void {
    this.jobs.set(job.handle, job);
  }

  get(handle: number): EngineJob | undefined {
    return this.jobs.get(handle);
  }

  forget(handle: number): void {
    this.jobs.delete(handle);
  }

  get size(): number {
    return this.jobs.size;
  }
}
