import { vi } from 'vitest';
import { main } from '../../src/cli/program.js';

/** Runs the CLI in-process and captures what it prints (stdout, stderr) and its exit code. */
export async function runCli(...args: string[]): Promise<{ out: string; err: string; code: number }> {
  const out: string[] = [];
  const err: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void out.push(a.join(' ')));
  const error = vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void err.push(a.join(' ')));
  process.exitCode = 0;
  try {
    await main(args);
    return { out: out.join('\n'), err: err.join('\n'), code: Number(process.exitCode ?? 0) };
  } finally {
    log.mockRestore();
    error.mockRestore();
    process.exitCode = 0;
  }
}
