/**
 * DOM helpers shared by both pages. Every string from JSON is inserted with textContent or
 * setAttribute — never as HTML — and updates change the DOM only where a value changed, so
 * nothing flickers.
 */

/** The element with this data-testid (the pages' stable hooks), which the markup always has. */
export function $(testid: string, root: ParentNode = document): HTMLElement {
  const e = root.querySelector<HTMLElement>('[data-testid="' + testid + '"]');
  if (!e) throw new Error('page markup lacks data-testid=' + testid);
  return e;
}

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, testid?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (testid) e.setAttribute('data-testid', testid);
  return e;
}

export function setText(e: Element, s: string | number | null | undefined): void {
  const v = s === null || s === undefined ? '' : String(s);
  if (e.textContent !== v) e.textContent = v;
}

export function setAttr(e: Element, k: string, v: string | number | boolean): void {
  const s = String(v);
  if (e.getAttribute(k) !== s) e.setAttribute(k, s);
}

export function setActive(e: Element, on: boolean): void {
  setAttr(e, 'data-active', on ? 'true' : 'false');
}

export function setWidth(e: HTMLElement, w: string): void {
  if (e.style.width !== w) e.style.width = w;
}

const keyed = new WeakMap<Element, Map<string, Element>>();

/**
 * Keeps `parent`'s children in the order of `items`, reusing the node made for each key.
 * `parent` must hold only keyed children.
 */
export function reconcile<T, N extends Element>(
  parent: Element,
  items: readonly T[],
  keyOf: (x: T, i: number) => string,
  create: (x: T, i: number) => N,
  update: (node: N, x: T, i: number) => void,
): void {
  let map = keyed.get(parent);
  if (!map) {
    map = new Map();
    keyed.set(parent, map);
  }
  const seen = new Set<string>();
  let cursor = parent.firstChild;
  for (let i = 0; i < items.length; i++) {
    let key = keyOf(items[i], i);
    if (seen.has(key)) key = key + '\u0000#' + i;
    seen.add(key);
    let node = map.get(key) as N | undefined;
    if (!node) {
      node = create(items[i], i);
      map.set(key, node);
    }
    update(node, items[i], i);
    if (node === cursor) cursor = cursor.nextSibling;
    else parent.insertBefore(node, cursor);
  }
  map.forEach((node, k) => {
    if (!seen.has(k)) {
      node.remove();
      map!.delete(k);
    }
  });
}

/** Per-node references to children, so updates never query the DOM. */
const refs = new WeakMap<Element, unknown>();
export function setRef<R>(node: Element, r: R): void {
  refs.set(node, r);
}
export function ref<R>(node: Element): R {
  return refs.get(node) as R;
}
