/**
 * The connection box both pages show beside their alerts: LIVE / STALE / SOURCE DOWN /
 * UNREACHABLE, the data's age and a banner saying why it is not live.
 * Hooks: conn-state (data-state), conn-label, snapshot-age, conn-detail, stale-banner
 * (data-active); the page root's data-conn.
 */
import { $, setActive, setAttr, setText } from '../dom.js';

export type ConnState = 'connecting' | 'live' | 'stale' | 'down';

export interface ConnView {
  conn: ConnState;
  label: string;
  /** Text after the pill ("snapshot 3.2 s old"), "" for none. */
  age: string;
  detail: string;
  /** The banner's text, or null when the data is live. */
  stale: string | null;
}

export function renderConn(app: HTMLElement, v: ConnView): void {
  setAttr($('conn-state'), 'data-state', v.conn);
  setAttr(app, 'data-conn', v.conn);
  setText($('conn-label'), v.label);
  setText($('snapshot-age'), v.age);
  setText($('conn-detail'), v.detail);
  const sb = $('stale-banner');
  setActive(sb, v.stale !== null);
  setText(sb, v.stale || '');
}
