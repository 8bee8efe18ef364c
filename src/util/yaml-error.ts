/**
 * One line for a YAML parse error, pointing at the line a person would look at. The `yaml`
 * package reports an error found at the end of the input (an unclosed `[` or quote) after the
 * file's final newline — "line 2" of a one-line file, a line that does not exist — so such an
 * error is placed at the end of the last line with content instead.
 */
export function yamlErrorLine(e: Error, text: string): string {
  const first = e.message.split('\n')[0];
  const pos = (e as { pos?: unknown }).pos;
  if (!Array.isArray(pos) || typeof pos[0] !== 'number') return first;
  const what = first.replace(/ at line \d+, column \d+:?$/, '');
  let at = Math.max(0, Math.min(pos[0], text.length));
  if (text.slice(at).trim() === '') at = text.trimEnd().length;
  const before = text.slice(0, at);
  const line = before.split('\n').length;
  const column = at - (before.lastIndexOf('\n') + 1) + 1;
  return `${what} at line ${line}, column ${column}`;
}
