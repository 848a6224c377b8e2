// CPU of a PostgreSQL cluster started for a bench (test/support/postgres-cluster.ts), read from /proc: for the
// deltas around a measured window.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PostgresCluster } from '../test/support/postgres-cluster.js';

const TICKS = 100;

/** CPU seconds of a process and the children it reaped, from /proc (clock ticks at 100 Hz). */
export function procCpuSeconds(pid: number, withReaped: boolean): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    const [utime, stime, cutime, cstime] = [11, 12, 13, 14].map((i) => Number(fields[i]));
    return (utime! + stime! + (withReaped ? cutime! + cstime! : 0)) / TICKS;
  } catch {
    return 0;
  }
}

/** The PostgreSQL server's CPU so far: the postmaster, its reaped backends, and the live ones. */
export function serverCpuSeconds(cluster: PostgresCluster): number {
  const postmaster = Number(readFileSync(join(cluster.dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
  const children = readdirSync(`/proc/${postmaster}/task`).flatMap((task) =>
    readFileSync(`/proc/${postmaster}/task/${task}/children`, 'utf8').split(' ').filter(Boolean).map(Number),
  );
  return procCpuSeconds(postmaster, true) + children.reduce((sum, pid) => sum + procCpuSeconds(pid, false), 0);
}
