import type { ChildProcess } from 'node:child_process';

/** Sends SIGTERM to `child` and waits until it exited; rejects naming `label` if it still runs at the deadline. */
export async function terminate(child: ChildProcess, label: string, deadlineMs = 60_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${label} did not exit within ${deadlineMs} ms of SIGTERM`)), deadlineMs);
  });
  try {
    await Promise.race([exited, late]);
  } finally {
    clearTimeout(timer);
  }
}
