import { existsSync, readFileSync } from 'node:fs';

/**
 * Every byte a JSON store keeps: its snapshot and its journal (commits append to the journal, so comparing
 * the snapshot alone would miss them). For "refused input leaves the store byte-identical" checks.
 */
export function jsonStoreBytes(file: string): string {
  const journal = `${file}.journal`;
  return readFileSync(file, 'utf8') + '\u0000' + (existsSync(journal) ? readFileSync(journal, 'utf8') : '');
}
