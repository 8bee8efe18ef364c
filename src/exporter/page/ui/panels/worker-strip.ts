/**
 * Every worker of a prover as one cell, busy (filled) or idle (hollow), grouped by GPU: the
 * prover's state at a glance. Hooks: strip-gpu (data-gpu), strip-cell (data-busy,
 * data-worker), strip-count ("3/4 busy").
 */
import { el, reconcile, setAttr, setText } from '../dom.js';
import { int, Json } from '../json.js';

export interface StripWorker {
  id: number;
  gpu: number;
  busy: boolean;
}

export function stripWorkers(list: Json[]): StripWorker[] {
  return list
    .map((w) => ({ id: int(w.id), gpu: int(w.gpu), busy: w.busy === true }))
    .filter((w): w is StripWorker => w.id !== null && w.gpu !== null)
    .sort((a, b) => a.gpu - b.gpu || a.id - b.id);
}

export function createStrip(): HTMLElement {
  const s = el('div', 'strip');
  s.appendChild(el('span', 'strip-gpus'));
  s.appendChild(el('span', 'strip-count', 'strip-count'));
  return s;
}

export function updateStrip(strip: HTMLElement, workers: StripWorker[]): void {
  const gpusBox = strip.firstElementChild as HTMLElement;
  const count = strip.lastElementChild as HTMLElement;
  const byGpu = new Map<number, StripWorker[]>();
  for (const w of workers) {
    let g = byGpu.get(w.gpu);
    if (!g) byGpu.set(w.gpu, (g = []));
    g.push(w);
  }
  const gpus = [...byGpu.entries()];
  reconcile(
    gpusBox,
    gpus,
    ([g]) => 'g' + g,
    () => el('span', 'strip-gpu', 'strip-gpu'),
    (box, [g, ws]) => {
      setAttr(box, 'data-gpu', g);
      setAttr(box, 'title', (g < 0 ? 'GPU unknown' : 'GPU ' + g) + ': ' + ws.filter((w) => w.busy).length + ' of ' + ws.length + ' workers busy');
      reconcile(
        box,
        ws,
        (w) => 'w' + w.id,
        () => el('span', 'strip-cell', 'strip-cell'),
        (cell, w) => {
          setAttr(cell, 'data-busy', w.busy);
          setAttr(cell, 'data-worker', w.id);
          setAttr(cell, 'title', 'W' + w.id + (g < 0 ? '' : ' on GPU ' + g) + ': ' + (w.busy ? 'busy' : 'idle'));
        },
      );
    },
  );
  const busy = workers.filter((w) => w.busy).length;
  setText(count, workers.length ? busy + '/' + workers.length + ' busy' : 'no workers reported');
}
