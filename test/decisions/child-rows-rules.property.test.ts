import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import {
  BRANCH_ATTRIBUTE,
  PARENT_ATTRIBUTE,
  POSITION_ATTRIBUTE,
  childItemId,
} from '../../src/decisions/coordinator/child-rows.js';
import type { SqliteDatabase } from '../../src/persistence/kernel/database.js';
import { ROOT_ITEM_SQL } from '../../src/persistence/coordinator/item-reads.js';
import { COORDINATOR_SCHEMA } from '../../src/persistence/coordinator/sqlite-schema.js';

/**
 * The rules of the rows that link a child work item to its parent, each
 * stated on its own: a child's id is under its parent's, and the attributes
 * a child is written with are the ones the stores read back (a stored item
 * keeps its attributes across versions: the stores' SQL names them).
 */

const attributeValue = fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean());
/** Attributes a caller may give an item: any names but the ones that link a child. */
const callerAttributes = fc.dictionary(
  fc.string({ maxLength: 8 }).filter((k) => ![PARENT_ATTRIBUTE, BRANCH_ATTRIBUTE, POSITION_ATTRIBUTE].includes(k)),
  attributeValue,
  { maxKeys: 4 },
);

/** SQL's `attributes NOT LIKE '%…%'` of `ROOT_ITEM_SQL`, read as JavaScript over the stored JSON text. */
function isRootInSql(attributes: Record<string, unknown> | null): boolean {
  const like = /NOT LIKE '%(.*)%'/.exec(ROOT_ITEM_SQL);
  if (like === null) throw new Error(`ROOT_ITEM_SQL has no NOT LIKE: ${ROOT_ITEM_SQL}`);
  return attributes === null || !JSON.stringify(attributes).includes(like[1] as string);
}

/** The statements a SQLite migration runs, captured. */
function sqliteMigrationText(version: number): string {
  const migration = COORDINATOR_SCHEMA.migrations.find((m) => m.version === version);
  if (migration === undefined) throw new Error(`no migration ${version}`);
  const statements: string[] = [];
  migration.up({ exec: (sql: string) => statements.push(sql) } as unknown as SqliteDatabase);
  return statements.join('\n');
}

describe('child rows: the ids and attributes that link a child to its parent', () => {
  test.prop([fc.string({ maxLength: 8 }), fc.nat({ max: 1000 }), fc.string({ maxLength: 8 })])(
    "a child's id starts with its parent's id and a dot, then its hop and branch",
    (parentId, hop, branch) => {
      const id = childItemId(parentId, hop, branch);
      expect(id.startsWith(`${parentId}.`)).toBe(true);
      expect(id.slice(parentId.length + 1)).toBe(`${hop}.${branch}`);
    },
  );

  it('the three linking attributes are distinct names', () => {
    expect(new Set([PARENT_ATTRIBUTE, BRANCH_ATTRIBUTE, POSITION_ATTRIBUTE]).size).toBe(3);
  });

  test.prop([callerAttributes, fc.string({ maxLength: 8 }), fc.nat({ max: 20 }), fc.string({ maxLength: 4 })])(
    "the stores' SQL reads an item written with a parent attribute as a child, and one without as a root",
    (attributes, parentId, hop, branch) => {
      const child = { ...attributes, [PARENT_ATTRIBUTE]: parentId, [BRANCH_ATTRIBUTE]: `${hop}:${branch}` };
      expect(isRootInSql(child)).toBe(false);
      expect(isRootInSql(attributes)).toBe(true);
      expect(isRootInSql(null)).toBe(true);
    },
  );

  it("SQLite's migration that numbers the children of earlier versions reads and writes the attributes a child is written with", () => {
    const text = sqliteMigrationText(12);
    for (const name of [PARENT_ATTRIBUTE, BRANCH_ATTRIBUTE, POSITION_ATTRIBUTE]) {
      expect(text).toContain(`'$."${name}"'`);
    }
  });
});
