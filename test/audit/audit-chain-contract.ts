import { type KeyObject, generateKeyPairSync, verify } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { AuditChain } from '../../src/persistence/audit/audit-chain.js';
import { AuditError } from '../../src/persistence/audit/audit-error.js';
import { AUDIT_GENESIS_HASH, auditRowHash } from '../../src/persistence/audit/chain-hash.js';
import { auditKeyId, checkpointMessage } from '../../src/persistence/audit/checkpoints.js';
import type { Clock } from '../../src/persistence/kernel/clock.js';
import type { AuditEntryInput } from '../../src/protocol/audit.js';

/**
 * The contract every `AuditChain` keeps, whatever store holds the rows. A
 * backend's test file calls `runAuditChainContract(name, factory)`; the
 * factory opens an empty chain of its own on the given clock and knows how to
 * edit a stored row behind the chain's back (the tamper tests).
 */

export interface ContractChain {
  chain: AuditChain;
  /** Overwrites row `seq`'s stored `data` column with `data` (as an attacker with write access would). */
  setStoredData(seq: number, data: string): Promise<void>;
  /** Closes and removes everything the factory opened. */
  cleanup(): Promise<void>;
}

export type AuditChainFactory = (clock: Clock) => Promise<ContractChain>;

/** A clock standing at 2026-01-02T03:04:05.000Z until moved. */
function manualClock(): Clock & { advance(ms: number): void } {
  let now = Date.UTC(2026, 0, 2, 3, 4, 5);
  return {
    now: () => now,
    advance: (ms) => {
      now += ms;
    },
  };
}

function entry(itemId: string, n: number, extra: Partial<AuditEntryInput> = {}): AuditEntryInput {
  return {
    kind: 'dispatch',
    itemId,
    hop: n,
    actor: 'coordinator',
    data: { n, note: `row ${n} of ${itemId}` },
    ...extra,
  };
}

function ed25519(): { privateKey: KeyObject; publicKey: KeyObject } {
  return generateKeyPairSync('ed25519');
}

export function runAuditChainContract(name: string, factory: AuditChainFactory): void {
  describe(`AuditChain contract: ${name}`, () => {
    let opened: ContractChain | undefined;
    let clock: ReturnType<typeof manualClock>;
    const open = async (): Promise<ContractChain> => {
      clock = manualClock();
      opened = await factory(clock);
      return opened;
    };
    afterEach(async () => {
      await opened?.cleanup();
      opened = undefined;
    });

    it('appends in order and moves the head: each row chained to the one before with the shared hashing', async () => {
      const { chain } = await open();
      expect(await chain.head()).toEqual({ seq: 0, hash: AUDIT_GENESIS_HASH });
      expect(await chain.appendMany([])).toEqual([]);
      expect(await chain.head()).toEqual({ seq: 0, hash: AUDIT_GENESIS_HASH });

      const first = await chain.appendMany([
        entry('a', 1),
        { kind: 'item-created', itemId: 'b', actor: 'coordinator', data: { workflow: 'wf' } },
      ]);
      clock.advance(1500);
      const second = await chain.appendMany([entry('a', 2, { at: '2020-05-06T07:08:09.000Z' })]);
      const appended = [...first, ...second];
      expect(appended.map((a) => a.seq)).toEqual([1, 2, 3]);
      expect(appended.map((a) => a.at)).toEqual([
        '2026-01-02T03:04:05.000Z',
        '2026-01-02T03:04:05.000Z',
        '2020-05-06T07:08:09.000Z',
      ]);
      expect(appended[0]!.prevHash).toBe(AUDIT_GENESIS_HASH);
      expect(appended[1]!.prevHash).toBe(appended[0]!.hash);
      expect(appended[2]!.prevHash).toBe(appended[1]!.hash);
      expect(await chain.head()).toEqual({ seq: 3, hash: appended[2]!.hash });

      const rows = await chain.list();
      expect(rows.map((r) => [r.seq, r.itemId, r.hop, r.at])).toEqual([
        [1, 'a', 1, '2026-01-02T03:04:05.000Z'],
        [2, 'b', null, '2026-01-02T03:04:05.000Z'],
        [3, 'a', 2, '2020-05-06T07:08:09.000Z'],
      ]);
      for (const [i, row] of rows.entries()) {
        expect(row.hash).toBe(appended[i]!.hash);
        expect(row.prevHash).toBe(appended[i]!.prevHash);
        expect(row.hash).toBe(auditRowHash(row.prevHash, row));
      }
      expect(rows[0]!.data).toEqual({ n: 1, note: 'row 1 of a' });
    });

    it('refuses a batch with a bad entry whole (AUDIT_INVALID_ENTRY, its path named): nothing is appended', async () => {
      const { chain } = await open();
      await chain.appendMany([entry('a', 1)]);
      const head = await chain.head();
      const refused = chain.appendMany([entry('a', 2), { ...entry('a', 3), kind: 'no-such-kind' as 'dispatch' }]);
      await expect(refused).rejects.toBeInstanceOf(AuditError);
      await expect(refused).rejects.toMatchObject({ code: 'AUDIT_INVALID_ENTRY', path: ['kind'] });
      expect(await chain.head()).toEqual(head);
      expect((await chain.list()).map((r) => r.seq)).toEqual([1]);
    });

    it('lists rows in order, filtered by item, after a seq, at most a limit', async () => {
      const { chain } = await open();
      await chain.appendMany([entry('a', 1), entry('b', 1), entry('a', 2), entry('c', 1), entry('a', 3)]);
      const seqs = async (options?: Parameters<AuditChain['list']>[0]) => (await chain.list(options)).map((r) => r.seq);
      expect(await seqs()).toEqual([1, 2, 3, 4, 5]);
      expect(await seqs({ itemId: 'a' })).toEqual([1, 3, 5]);
      expect(await seqs({ itemId: 'nobody' })).toEqual([]);
      expect(await seqs({ afterSeq: 2 })).toEqual([3, 4, 5]);
      expect(await seqs({ limit: 2 })).toEqual([1, 2]);
      expect(await seqs({ limit: 0 })).toEqual([]);
      expect(await seqs({ itemId: 'a', afterSeq: 1, limit: 1 })).toEqual([3]);
      expect(await seqs({ afterSeq: 5 })).toEqual([]);
    });

    it('signs the head with a key (once per head), and verifies every link and checkpoint with the public key', async () => {
      const { chain } = await open();
      const key = ed25519();
      expect(await chain.checkpoint(key.privateKey)).toBeNull();
      expect(await chain.checkpoints()).toEqual([]);

      await chain.appendMany([entry('a', 1), entry('a', 2)]);
      const head = await chain.head();
      const signed = await chain.checkpoint(key.privateKey);
      expect(signed).toMatchObject({ seq: 2, hash: head.hash, at: '2026-01-02T03:04:05.000Z' });
      expect(signed!.keyId).toBe(auditKeyId(key.publicKey));
      expect(verify(null, checkpointMessage(signed!), key.publicKey, Buffer.from(signed!.signature, 'base64'))).toBe(
        true,
      );
      clock.advance(60_000);
      // The same head, the same key: the stored checkpoint, not a new signature.
      expect(await chain.checkpoint(key.privateKey)).toEqual(signed);
      expect(await chain.checkpoints()).toEqual([signed]);

      expect(await chain.verifyChain({ publicKey: key.publicKey, requireSignedHead: true })).toEqual({
        ok: true,
        entries: 2,
        head,
        checkpoints: { keyId: signed!.keyId, verified: 1, otherKeys: 0, signedSeq: 2, unsignedRows: 0 },
      });

      await chain.appendMany([entry('a', 3)]);
      const grown = await chain.verifyChain({ publicKey: key.publicKey });
      expect(grown).toMatchObject({ ok: true, entries: 3, checkpoints: { signedSeq: 2, unsignedRows: 1 } });
      expect(await chain.verifyChain({ publicKey: key.publicKey, requireSignedHead: true })).toMatchObject({
        ok: false,
        seq: 3,
        reason: 'unsigned-head',
      });
      // Another key's checkpoints are counted, not checked.
      const other = ed25519();
      expect(await chain.verifyChain({ publicKey: other.publicKey })).toMatchObject({
        ok: true,
        checkpoints: { keyId: auditKeyId(other.publicKey), verified: 0, otherKeys: 1, signedSeq: 0, unsignedRows: 3 },
      });
      const second = await chain.checkpoint(key.privateKey);
      expect(second).toMatchObject({ seq: 3, at: '2026-01-02T03:05:05.000Z' });
      expect((await chain.checkpoints()).map((c) => c.seq)).toEqual([2, 3]);
    });

    it('refuses to sign with anything but an Ed25519 private key (AUDIT_BAD_KEY)', async () => {
      const { chain } = await open();
      await chain.appendMany([entry('a', 1)]);
      const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 });
      await expect(chain.checkpoint(rsa.privateKey)).rejects.toMatchObject({ code: 'AUDIT_BAD_KEY' });
      await expect(chain.checkpoint(ed25519().publicKey)).rejects.toMatchObject({ code: 'AUDIT_BAD_KEY' });
      expect(await chain.checkpoints()).toEqual([]);
    });

    it("catches a row whose stored data was edited: hash-mismatch at that row's seq", async () => {
      const { chain, setStoredData } = await open();
      await chain.appendMany([entry('a', 1), entry('a', 2), entry('a', 3), entry('a', 4)]);
      expect(await chain.verifyChain()).toMatchObject({ ok: true, entries: 4 });
      await setStoredData(3, '{"n":3,"note":"forged"}');
      const verification = await chain.verifyChain();
      expect(verification).toMatchObject({ ok: false, seq: 3, reason: 'hash-mismatch' });
      // The edit is what list reads back (the chain shows it; verify catches it).
      expect((await chain.list({ afterSeq: 2, limit: 1 }))[0]!.data).toEqual({ n: 3, note: 'forged' });
    });

    it('checks a head noted earlier as a prefix: grown is fine, rewritten is head-mismatch, shorter is truncated', async () => {
      const { chain } = await open();
      const [, noted] = await chain.appendMany([entry('a', 1), entry('a', 2)]);
      const expectedHead = { seq: noted!.seq, hash: noted!.hash };
      expect(await chain.verifyChain({ expectedHead })).toMatchObject({ ok: true, entries: 2 });
      await chain.appendMany([entry('a', 3), entry('b', 1)]);
      expect(await chain.verifyChain({ expectedHead })).toEqual({ ok: true, entries: 4, head: await chain.head() });

      const rewritten = await chain.verifyChain({ expectedHead: { seq: 2, hash: 'f'.repeat(64) } });
      expect(rewritten).toMatchObject({ ok: false, seq: 2, reason: 'head-mismatch' });
      const ahead = await chain.verifyChain({ expectedHead: { seq: 9, hash: noted!.hash } });
      expect(ahead).toMatchObject({ ok: false, seq: 5, reason: 'truncated' });
    });
  });
}
