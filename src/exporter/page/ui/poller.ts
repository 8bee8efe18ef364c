/**
 * The pages' one loop: GET a JSON document relative to the page, every `intervalMs` from the
 * start of the previous request (never two at once), with a timeout and cache: 'no-store'.
 */
import { isObj, Json } from './json.js';

export interface PollOptions {
  url: string;
  intervalMs: number;
  timeoutMs: number;
  /** A good answer (a JSON object); an error answer whose body still is one (`accept`) counts too. */
  onBody(body: Json): void;
  onError(message: string): void;
  /** After every poll, good or bad. */
  after(): void;
  /** Whether a non-2xx answer with this body is still rendered (the box page's /status with an exporter object). */
  accept?(body: unknown): boolean;
}

export function errorText(err: unknown, timedOut: boolean, timeoutMs: number): string {
  if (timedOut) return 'timed out after ' + timeoutMs / 1000 + ' s';
  const m = err instanceof Error ? err.message : String(err);
  return m === 'Failed to fetch' ? 'connection failed' : m;
}

export function startPolling(o: PollOptions): void {
  const poll = () => {
    const started = performance.now();
    const ctrl = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      ctrl.abort();
    }, o.timeoutMs);
    fetch(o.url, { cache: 'no-store', headers: { Accept: 'application/json' }, signal: ctrl.signal })
      .then((res) =>
        res.text().then((text) => {
          let body: unknown = null;
          try {
            body = JSON.parse(text);
          } catch {
            body = null;
          }
          if (!res.ok && !(o.accept && o.accept(body))) throw new Error('HTTP ' + res.status);
          if (!isObj(body)) throw new Error(o.url + ' did not return a JSON object');
          o.onBody(body);
        }),
      )
      .catch((err: unknown) => o.onError(errorText(err, timedOut, o.timeoutMs)))
      .then(() => {
        clearTimeout(timer);
        o.after();
        setTimeout(poll, Math.max(0, o.intervalMs - (performance.now() - started)));
      });
  };
  o.after();
  poll();
}
