/**
 * The `id` of a request exactly as it was written, for ids that a JSON number
 * cannot hold (integers beyond 2^53, say): JSON-RPC answers must echo the id
 * sent, and `JSON.parse` rounds such a number. Reads the text of an already
 * parsed line (so it is valid JSON) without building any value.
 */
export function rawIdLiteral(text: string, batchIndex?: number): string | undefined {
  const scanner = new Scanner(text);
  scanner.ws();
  if (batchIndex !== undefined) {
    if (!scanner.take('[')) return undefined;
    for (let i = 0; i < batchIndex; i++) {
      scanner.ws();
      scanner.skipValue();
      scanner.ws();
      if (!scanner.take(',')) return undefined;
    }
    scanner.ws();
  }
  if (!scanner.take('{')) return undefined;
  let literal: string | undefined;
  scanner.ws();
  if (scanner.take('}')) return undefined;
  for (;;) {
    scanner.ws();
    const keyStart = scanner.at;
    scanner.skipValue();
    const key = JSON.parse(text.slice(keyStart, scanner.at)) as unknown;
    scanner.ws();
    if (!scanner.take(':')) return undefined;
    scanner.ws();
    const valueStart = scanner.at;
    scanner.skipValue();
    // The last duplicate key wins, as in JSON.parse.
    if (key === 'id') literal = text.slice(valueStart, scanner.at);
    scanner.ws();
    if (!scanner.take(',')) return literal;
  }
}

class Scanner {
  at = 0;
  constructor(private readonly text: string) {}

  ws(): void {
    const t = this.text;
    while (this.at < t.length) {
      const c = t.charCodeAt(this.at);
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return;
      this.at++;
    }
  }

  take(char: string): boolean {
    if (this.text[this.at] !== char) return false;
    this.at++;
    return true;
  }

  /** Moves past one JSON value (string, number, literal, object or array). */
  skipValue(): void {
    const t = this.text;
    const first = t[this.at];
    if (first === '"') {
      this.skipString();
      return;
    }
    if (first === '{' || first === '[') {
      let depth = 0;
      while (this.at < t.length) {
        const c = t[this.at];
        if (c === '"') {
          this.skipString();
          continue;
        }
        if (c === '{' || c === '[') depth++;
        else if (c === '}' || c === ']') depth--;
        this.at++;
        if (depth === 0) return;
      }
      return;
    }
    while (this.at < t.length && !',}] \t\r\n'.includes(t[this.at] as string)) this.at++;
  }

  private skipString(): void {
    const t = this.text;
    let at = this.at + 1;
    for (;;) {
      const quote = t.indexOf('"', at);
      if (quote < 0) {
        this.at = t.length;
        return;
      }
      let backslashes = 0;
      while (t.charCodeAt(quote - 1 - backslashes) === 0x5c) backslashes++;
      at = quote + 1;
      if (backslashes % 2 === 0) {
        this.at = at;
        return;
      }
    }
  }
}
