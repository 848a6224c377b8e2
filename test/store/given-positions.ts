import { expect } from 'vitest';

/**
 * The feed positions a test's appends were given, in commit order: `at(k)` is the k-th one's. Checks that they
 * increase, and that a store without gaps numbered them 0, 1, 2, ….
 */
export class Given {
  private readonly positions: number[] = [];
  constructor(private readonly gapped: boolean) {}
  note<E extends { position: number }>(entry: E): E {
    this.positions.push(entry.position);
    return entry;
  }
  at(k: number): number {
    const position = this.positions[k];
    if (position === undefined) throw new Error(`no append ${k} was noted`);
    return position;
  }
  check(): void {
    for (let k = 1; k < this.positions.length; k++) expect(this.positions[k]).toBeGreaterThan(this.positions[k - 1]!);
    if (!this.gapped) expect(this.positions).toEqual(this.positions.map((_, k) => k));
  }
}
