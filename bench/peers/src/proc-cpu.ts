// CPU of a server: the sum over its whole process tree (PostgreSQL forks a backend per connection) read from
// /proc/<pid>/stat. Living processes count their own time; exited children's time is in their parent's
// cutime/cstime once reaped, so summing all four fields over the living tree counts everything once.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

let ticksPerSecond: number | undefined;

function clockTicks(): number {
  ticksPerSecond ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  return ticksPerSecond;
}

interface Stat {
  ppid: number;
  ticks: number;
}

function readStat(pid: number): Stat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name is in parentheses and may hold spaces; the fields after its last ')' are fixed.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    // After the name: state(0) ppid(1) … utime(11) stime(12) cutime(13) cstime(14).
    const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
    return { ppid: Number(fields[1]), ticks };
  } catch {
    // The process exited between listing and reading: its time is now its parent's.
    return undefined;
  }
}

/** CPU seconds (user + system) used so far by `rootPid` and every living descendant, with their reaped children. */
export function treeCpuSeconds(rootPid: number): number {
  const stats = new Map<number, Stat>();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const stat = readStat(pid);
    if (stat !== undefined) stats.set(pid, stat);
  }
  const children = new Map<number, number[]>();
  for (const [pid, stat] of stats) children.set(stat.ppid, [...(children.get(stat.ppid) ?? []), pid]);
  let ticks = 0;
  const pending = [rootPid];
  while (pending.length > 0) {
    const pid = pending.pop()!;
    ticks += stats.get(pid)?.ticks ?? 0;
    pending.push(...(children.get(pid) ?? []));
  }
  return ticks / clockTicks();
}

/** The CPU of the servers a child uses, for deltas around a measured window. */
export function serversCpuSeconds(pids: Array<number | undefined>): number {
  return pids.reduce<number>((sum, pid) => sum + (pid === undefined ? 0 : treeCpuSeconds(pid)), 0);
}

/** This process's CPU seconds (user + system). */
export function ownCpuSeconds(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
}
