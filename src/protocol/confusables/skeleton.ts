import { PROTOTYPES } from './table.js';

/** Default_Ignorable_Code_Point: removed by the skeleton (UTS #39 section 4, step 2). */
const DEFAULT_IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu;

let prototypes: Map<number, string> | undefined;

/** The prototype table, decoded on first use (about 6,600 entries). */
function prototypeTable(): Map<number, string> {
  if (prototypes !== undefined) return prototypes;
  const table = new Map<number, string>();
  let source = 0;
  for (const entry of PROTOTYPES.split(',')) {
    const [delta, ...prototype] = entry.split('.').map((n) => Number.parseInt(n, 36));
    source += delta!;
    table.set(source, String.fromCodePoint(...prototype));
  }
  prototypes = table;
  return table;
}

/**
 * The UTS #39 skeleton of a text: NFD, default-ignorable code points removed,
 * each code point replaced by its prototype (confusables.txt, see
 * `table.ts`), NFD again. Two texts with equal skeletons are confusable
 * (`ǀead`, `Iead` and `1ead` all have the skeleton `lead`). A skeleton is a
 * comparison key, never shown or stored as a name.
 */
export function skeleton(text: string): string {
  const table = prototypeTable();
  let out = '';
  for (const char of text.normalize('NFD').replace(DEFAULT_IGNORABLE, '')) {
    out += table.get(char.codePointAt(0)!) ?? char;
  }
  return out.normalize('NFD');
}
