/** Proof kinds in cuzk's order, then any other name alphabetically. */
export const KIND_ORDER = ['porep-c2', 'snap-update', 'window-post', 'winning-post'];

export function sortKinds(keys: string[]): string[] {
  return keys.slice().sort((a, b) => {
    let ia = KIND_ORDER.indexOf(a), ib = KIND_ORDER.indexOf(b);
    if (ia < 0) ia = 99;
    if (ib < 0) ib = 99;
    return ia !== ib ? ia - ib : a < b ? -1 : a > b ? 1 : 0;
  });
}
