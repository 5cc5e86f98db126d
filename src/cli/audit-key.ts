import { type KeyObject, createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { auditKeyId } from '../persistence/audit/checkpoints.js';
import { CliUsageError } from './command-args.js';

/**
 * The Ed25519 key the Coordinator signs audit checkpoints with. It is read
 * from a PEM file only its owner can read (`--audit-key FILE`) or from the
 * PEM in `SWITCHBOARD_AUDIT_KEY`; it is never written to the database, a log
 * line or an error (errors name the file, never its content).
 */
export const AUDIT_KEY_ENV = 'SWITCHBOARD_AUDIT_KEY';

function parsePrivateKey(pem: string, where: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem, format: 'pem' });
  } catch {
    throw new CliUsageError(`${where} is not a PEM private key (make one with: switchboard audit keygen --out FILE)`);
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new CliUsageError(`${where} is not an Ed25519 key (make one with: switchboard audit keygen --out FILE)`);
  }
  return key;
}

/** The signing key from `file` or else the environment; undefined when neither is given. */
export function loadAuditPrivateKey(
  file: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): KeyObject | undefined {
  if (file !== undefined) {
    let mode: number;
    try {
      mode = statSync(file).mode;
    } catch {
      throw new CliUsageError(`--audit-key ${file}: no such file`);
    }
    if ((mode & 0o077) !== 0) {
      throw new CliUsageError(
        `--audit-key ${file} is readable by group or others (mode ${(mode & 0o777).toString(8)}): chmod 600 it`,
      );
    }
    return parsePrivateKey(readFileSync(file, 'utf8'), `--audit-key ${file}`);
  }
  const pem = env[AUDIT_KEY_ENV];
  if (pem === undefined || pem === '') return undefined;
  return parsePrivateKey(pem, AUDIT_KEY_ENV);
}

/** A public key (PEM; a private key's file gives its public half). */
export function loadAuditPublicKey(file: string): KeyObject {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new CliUsageError(`--public-key ${file}: no such file`);
  }
  let key: KeyObject;
  try {
    key = createPublicKey({ key: text, format: 'pem' });
  } catch {
    throw new CliUsageError(`--public-key ${file} is not a PEM public key (audit keygen writes FILE.pub)`);
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new CliUsageError(`--public-key ${file} is not an Ed25519 key`);
  return key;
}

/** Writes a new key pair: the private key to `out` (mode 0600, never over a file) and the public key to `out.pub`. */
export function writeAuditKeyPair(out: string): { privateFile: string; publicFile: string; keyId: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const publicFile = `${out}.pub`;
  try {
    writeFileSync(out, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new CliUsageError(
      code === 'EEXIST'
        ? `--out ${out} exists: choose a new file (a key is never overwritten)`
        : `--out ${out}: ${code}`,
    );
  }
  writeFileSync(publicFile, publicKey.export({ type: 'spki', format: 'pem' }), { mode: 0o644 });
  return { privateFile: out, publicFile, keyId: auditKeyId(publicKey) };
}
