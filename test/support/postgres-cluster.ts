import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Where Debian's postgresql-15 package puts the server binaries; COVEN_POSTGRES_BIN names another folder. */
export const POSTGRES_BIN = process.env.COVEN_POSTGRES_BIN ?? '/usr/lib/postgresql/15/bin';
/** The server refuses to run as root, so as root the cluster runs as this system user. */
const SERVER_USER = 'postgres';

/** A throwaway cluster: its connection string (Unix socket only) and how to stop and delete it. */
export interface PostgresCluster {
  readonly url: string;
  readonly dir: string;
  stop(): Promise<void>;
}

/** Why no cluster can be started here, or undefined when the server binaries are present. */
export function missingServerBinaries(): string | undefined {
  const missing = ['initdb', 'pg_ctl', 'postgres'].filter((name) => !existsSync(join(POSTGRES_BIN, name)));
  return missing.length === 0
    ? undefined
    : `the PostgreSQL server binaries (${missing.join(', ')}) are not in ${POSTGRES_BIN}; install postgresql-15`;
}

/** The numeric ids of the server user, read with `id` (no native lookup in Node). */
async function serverUserIds(): Promise<{ uid: number; gid: number }> {
  const [{ stdout: uid }, { stdout: gid }] = await Promise.all([
    run('id', ['-u', SERVER_USER]),
    run('id', ['-g', SERVER_USER]),
  ]);
  return { uid: Number(uid.trim()), gid: Number(gid.trim()) };
}

/**
 * Starts a fresh cluster in a new temporary folder: initdb there (trust authentication, UTF-8, C collation),
 * then the server with its socket in that folder and no TCP listener. fsync stays on, as in production: a test
 * that passes only because commits were not durable would prove nothing about the store.
 */
export async function startCluster(): Promise<PostgresCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'coven-pg-'));
  const asRoot = userInfo().uid === 0;
  const prefix = asRoot ? ['runuser', '-u', SERVER_USER, '--'] : [];
  const exec = (binary: string, args: string[]) => {
    const [command, ...rest] = [...prefix, join(POSTGRES_BIN, binary), ...args];
    return run(command!, rest, { cwd: dir });
  };
  try {
    if (asRoot) {
      const { uid, gid } = await serverUserIds();
      chownSync(dir, uid, gid);
    }
    const data = join(dir, 'data');
    // --no-sync only skips flushing initdb's own fresh files; the server below runs with fsync on.
    await exec('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
    const settings = [
      "-c listen_addresses=''",
      `-c unix_socket_directories='${dir}'`,
      '-c fsync=on',
      '-c synchronous_commit=on',
      '-c max_connections=200',
    ].join(' ');
    await exec('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-w', '-t', '60', '-o', settings, 'start']);
    const stop = async () => {
      try {
        await exec('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '60', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    };
    return { url: `postgresql://postgres@/postgres?host=${encodeURIComponent(dir)}`, dir, stop };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
