/**
 * How deeply a YAML text nests, found without recursion. The yaml package's parse recurses
 * once per level of lists and mappings: about 1,000 levels (a 2 KB file of `[`) overflow the
 * stack, and after such an overflow a later parse in the same process can abort node outright
 * (a RegExp compile failing for memory, SIGABRT), which no catch stops. Every config file we
 * re-read while running (targets, web config) is therefore measured first and refused past
 * MAX_NESTING levels; a real one needs 4.
 */
import YAML from 'yaml';

/** Levels of lists and mappings a config file of ours may nest. */
export const MAX_NESTING = 64;

type CstNode = { type?: string; value?: unknown; items?: Array<{ key?: unknown; value?: unknown }> };

/**
 * Levels of lists and mappings (block or flow) in a YAML text, from the yaml package's syntax
 * tree (Parser: no recursion), walked with a stack of our own. (Keys sit in a collection's
 * items, next to their values: a document holds a value only.)
 */
export function yamlNestingDepth(text: string): number {
  let max = 0;
  const todo: Array<[unknown, number]> = [];
  for (const doc of new YAML.Parser().parse(text)) todo.push([doc, 0]);
  while (todo.length > 0) {
    const [node, above] = todo.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    const n = node as CstNode;
    const level = n.type === 'block-map' || n.type === 'block-seq' || n.type === 'flow-collection' ? above + 1 : above;
    if (level > max) max = level;
    todo.push([n.value, level]);
    if (Array.isArray(n.items)) for (const it of n.items) todo.push([it.key, level], [it.value, level]);
  }
  return max;
}
