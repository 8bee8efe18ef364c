/**
 * Reading untrusted JSON (a /status snapshot, the fleet summary) without trusting a field's
 * type: every accessor returns a safe value or null, never throws.
 */
export type Json = Record<string, unknown>;

export function isObj(x: unknown): x is Json {
  return x !== null && typeof x === 'object' && !Array.isArray(x);
}
export function arr(x: unknown): unknown[] {
  return Array.isArray(x) ? x : [];
}
/** The objects of an array field (anything else in it is skipped). */
export function objs(x: unknown): Json[] {
  return arr(x).filter(isObj);
}
export function obj(x: unknown): Json {
  return isObj(x) ? x : {};
}
export function num(x: unknown): number | null {
  return typeof x === 'number' && isFinite(x) ? x : null;
}
export function int(x: unknown): number | null {
  const n = num(x);
  return n === null ? null : Math.round(n);
}
export function str(x: unknown): string | null {
  if (typeof x === 'string') return x;
  if (typeof x === 'number' && isFinite(x)) return String(x);
  return null;
}
export function plural(n: number, one: string, many: string): string {
  return n + ' ' + (n === 1 ? one : many);
}
