/** A FollowerSink that records what the log follower hands on (timeline-follower tests, fuzz). */
import type { FollowerSink } from '../../src/engine/sources/attach/timeline-follower';

export class RecordingSink implements FollowerSink {
  live: string[] = [];
  history: string[] = [];
  lostReasons: string[] = [];
  states: [boolean, string | null][] = [];
  overlongs = 0;
  caughtUps = 0;
  /** Where each newFile() fell: the number of live lines handed on before it. */
  newFileAt: number[] = [];
  lines(text: string, history: boolean): void {
    const ls = text.split('\n').slice(0, -1);
    (history ? this.history : this.live).push(...ls);
  }
  overlong(_timeline?: boolean): void {
    this.overlongs++;
  }
  caughtUp(): void {
    this.caughtUps++;
  }
  newFile(): void {
    this.newFileAt.push(this.live.length);
  }
  state(up: boolean, reason: string | null): void {
    this.states.push([up, reason]);
  }
  lost(reason: string): void {
    this.lostReasons.push(reason);
  }
}
