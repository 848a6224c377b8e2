// Throwaway servers from the Debian packages, on loopback with free ports and data in temp directories:
// PostgreSQL 15 (fsync and synchronous_commit on) and Redis (AOF with appendfsync always). Stopped and
// removed when the bench ends, however it ends.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { Redis } from 'ioredis';

export const PG_BIN = process.env.PEERS_PG_BIN ?? '/usr/lib/postgresql/15/bin';
const START_LIMIT_MS = 30_000;
const STOP_LIMIT_MS = 10_000;

/** A port nothing listens on right now (the server takes it a moment later). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** PostgreSQL refuses to run as root: as root, its commands run as the `postgres` user, which owns the data. */
function asPostgres(command: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args];
}

export class PostgresServer {
  private constructor(
    readonly dir: string,
    readonly port: number,
    readonly pid: number,
  ) {}

  /** initdb + pg_ctl start on 127.0.0.1:<free port>, trust authentication, durable settings stated explicitly. */
  static async start(): Promise<PostgresServer> {
    if (!existsSync(join(PG_BIN, 'initdb')))
      throw new Error(`no PostgreSQL at ${PG_BIN}: apt-get install -y postgresql (or set PEERS_PG_BIN)`);
    const dir = mkdtempSync(join(tmpdir(), 'peers-pg-'));
    if (process.getuid?.() === 0) {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
      chownSync(dir, uid, gid);
    }
    const data = join(dir, 'data');
    const port = await freePort();
    const run = (bin: string, args: string[]) => {
      const [command, argv] = asPostgres(join(PG_BIN, bin), args);
      execFileSync(command, argv, { stdio: ['ignore', 'ignore', 'inherit'] });
    };
    run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
    const options = [
      `-p ${port}`,
      `-k ${dir}`,
      "-c listen_addresses='127.0.0.1'",
      '-c fsync=on',
      '-c synchronous_commit=on',
      '-c full_page_writes=on',
      '-c max_connections=200',
    ].join(' ');
    run('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'server.log'), '-w', '-t', '60', 'start']);
    const pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return new PostgresServer(dir, port, pid);
  }

  url(database: string): `postgres://${string}` {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  private async admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = new pg.Client({ connectionString: this.url('postgres') });
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  }

  /** A fresh database for one run, so no run finds another's tables, dead rows or statistics. */
  async createDatabase(name: string): Promise<void> {
    await this.admin((c) => c.query(`CREATE DATABASE "${name}"`));
  }

  async dropDatabase(name: string): Promise<void> {
    await this.admin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
  }

  stop(): void {
    try {
      const [command, argv] = asPostgres(join(PG_BIN, 'pg_ctl'), ['-D', join(this.dir, 'data'), '-m', 'fast', 'stop']);
      execFileSync(command, argv, { stdio: 'ignore' });
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }
}

export class RedisServer {
  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly child: ChildProcess,
  ) {}

  get pid(): number {
    return this.child.pid!;
  }

  /** redis-server on 127.0.0.1:<free port>, append-only file fsynced on every write, no RDB snapshots. */
  static async start(): Promise<RedisServer> {
    const bin = process.env.PEERS_REDIS_SERVER ?? 'redis-server';
    try {
      execFileSync(bin, ['--version'], { stdio: 'ignore' });
    } catch {
      throw new Error(`no ${bin}: apt-get install -y redis-server (or set PEERS_REDIS_SERVER)`);
    }
    const dir = mkdtempSync(join(tmpdir(), 'peers-redis-'));
    const port = await freePort();
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes'];
    args.push('--appendfsync', 'always', '--save', '', '--daemonize', 'no', '--logfile', join(dir, 'redis.log'));
    const child = spawn(bin, args, { stdio: 'ignore' });
    const server = new RedisServer(dir, port, child);
    const limit = performance.now() + START_LIMIT_MS;
    for (;;) {
      try {
        await server.command((r) => r.ping());
        return server;
      } catch (error) {
        if (performance.now() > limit || child.exitCode !== null) {
          await server.stop();
          throw new Error(`redis-server did not start: ${(error as Error).message}`, { cause: error });
        }
        await sleep(100);
      }
    }
  }

  async command<T>(work: (redis: Redis) => Promise<T>): Promise<T> {
    const redis = new Redis({ host: '127.0.0.1', port: this.port, lazyConnect: true, maxRetriesPerRequest: 0 });
    redis.on('error', () => undefined);
    try {
      await redis.connect();
      return await work(redis);
    } finally {
      redis.disconnect();
    }
  }

  /** Empties the server before a run (logged to the AOF like any write). */
  async flush(): Promise<void> {
    await this.command((r) => r.flushall());
  }

  /** SIGTERM (Redis fsyncs its AOF and exits), up to STOP_LIMIT_MS for it to go, then the directory is removed. */
  async stop(): Promise<void> {
    try {
      if (this.child.exitCode === null) {
        const gone = new Promise((resolve) => this.child.once('exit', resolve));
        this.child.kill('SIGTERM');
        await Promise.race([gone, sleep(STOP_LIMIT_MS)]);
      }
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }
}
