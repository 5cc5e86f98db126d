/**
 * The nesting depth of one JSON text, counted by a linear scan that stops at
 * the first level past `max`: brackets and braces outside strings open and
 * close levels, a string's escapes are skipped. The text is not validated
 * (`JSON.parse` does that afterwards); the scan only spares the parser a line
 * whose nesting alone would cost seconds (16 million nested arrays in 32 MiB).
 * Returns the deepest level reached, or `max + 1` as soon as it passes `max`.
 */
export function lineNesting(text: string, max: number): number {
  let depth = 0;
  let deepest = 0;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string: skip to its closing quote (one not escaped by an odd run of backslashes).
      let end = text.indexOf('"', i + 1);
      while (end !== -1 && escaped(text, end)) end = text.indexOf('"', end + 1);
      if (end === -1) return deepest;
      i = end;
    } else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > max) return deepest;
      }
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return deepest;
}

/** True when the quote at `at` follows an odd number of backslashes. */
function escaped(text: string, at: number): boolean {
  let slashes = 0;
  for (let i = at - 1; i >= 0 && text.charCodeAt(i) === 0x5c; i--) slashes++;
  return slashes % 2 === 1;
}
