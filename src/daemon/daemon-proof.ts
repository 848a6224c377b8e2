import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { lstatSync, readFileSync, type Stats } from 'node:fs';
import { ContractError } from '../contract/errors.js';
import { daemonRecordPath, tokenPath } from './files.js';

/**
 * Before the CLI sends a daemon anything that matters, the daemon proves it holds the store's token: the CLI
 * sends a fresh nonce, the daemon answers an HMAC of it under the token. Only the store's owner can read the
 * token (0600), so a listener another user put at the socket path cannot answer, and learns only the nonce.
 */
export const PROOF_PATH = '/api/v1/daemon-proof';

/** A nonce: 32 random bytes, hex. */
export const NONCE = /^[0-9a-f]{64}$/;

export const newNonce = (): string => randomBytes(32).toString('hex');

/** The daemon's answer to `nonce` for `storeFile`: HMAC-SHA256 under the token, bound to the store and purpose. */
export function proofOf(token: string, storeFile: string, nonce: string): string {
  return createHmac('sha256', token).update(`coven-automata daemon proof v1\0${storeFile}\0${nonce}`).digest('hex');
}

/** Whether `given` is the proof of `nonce`, compared in constant time. */
export function isProof(given: unknown, token: string, storeFile: string, nonce: string): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(given);
  const b = Buffer.from(proofOf(token, storeFile, nonce));
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The refusal of a socket the CLI will not speak to, naming it, why, and what to do. */
export function untrustedDaemon(storeFile: string, socketPath: string, why: string): ContractError {
  return new ContractError(
    'AUTHORITY_REQUIRED',
    `refusing the daemon socket ${socketPath} that ${daemonRecordPath(storeFile)} names: ${why}; nothing was ` +
      'sent to it (if no daemon of yours serves this store, stop whatever listens there or remove that file)',
    { socketPath, storeFile },
  );
}

const modeOf = (stat: Stats) => (stat.mode & 0o777).toString(8).padStart(4, '0');

/** Why a file the CLI would trust is not trustworthy: not of the expected type, not its owner's, or not private. */
export function ownershipProblem(stat: Stats, kind: 'socket' | 'file', owner: number | undefined): string | undefined {
  if (kind === 'socket' ? !stat.isSocket() : !stat.isFile()) return `it is not a ${kind}`;
  if (owner !== undefined && stat.uid !== owner) return `it belongs to uid ${stat.uid}, not uid ${owner}`;
  if ((stat.mode & 0o077) !== 0) return `its mode is ${modeOf(stat)}, not 0600`;
  return undefined;
}

function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * The token to check a daemon's proof against, once its socket and token file pass the owner and mode checks;
 * undefined when the socket is gone (a stopped daemon's stale record). The owner they must share is this
 * process's user (`uid`); root may speak to another user's daemon, whose socket must then be that user's too.
 */
export function socketToTrust(storeFile: string, socketPath: string, uid = process.getuid?.()): string | undefined {
  const socket = lstatOrUndefined(socketPath);
  if (socket === undefined) return undefined;
  const tokenFile = tokenPath(storeFile);
  const token = lstatOrUndefined(tokenFile);
  if (token === undefined) throw untrustedDaemon(storeFile, socketPath, `there is no token file ${tokenFile}`);
  const owner = uid === 0 ? token.uid : uid;
  const tokenProblem = ownershipProblem(token, 'file', owner);
  if (tokenProblem !== undefined)
    throw untrustedDaemon(storeFile, socketPath, `token file ${tokenFile}: ${tokenProblem}`);
  const socketProblem = ownershipProblem(socket, 'socket', owner);
  if (socketProblem !== undefined) throw untrustedDaemon(storeFile, socketPath, socketProblem);
  return readFileSync(tokenFile, 'utf8').trim();
}
