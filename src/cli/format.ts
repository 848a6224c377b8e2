const COLOURS: Record<string, string> = {
  succeeded: '32',
  active: '32',
  running: '36',
  claimed: '36',
  dispatching: '36',
  planned: '36',
  failed: '31',
  ambiguous: '31',
  recovery_required: '33',
  cancelled: '33',
  timed_out: '31',
  skipped: '90',
  dim: '90',
  bold: '1',
};

/** Colour only when writing to a terminal and NO_COLOR is unset; pipes and files get plain text. */
const useColour = () => process.stdout.isTTY === true && process.env.NO_COLOR === undefined;

export function paint(style: string, text: string): string {
  const code = COLOURS[style];
  return code === undefined || !useColour() ? text : `\u001b[${code}m${text}\u001b[0m`;
}

// ANSI colour sequences start with ESC, a control character by definition.
// eslint-disable-next-line no-control-regex
const visible = (s: string) => s.replace(/\u001b\[[0-9;]*m/g, '').length;

/** A plain aligned table. */
export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => visible(r[i] ?? ''))));
  const line = (cells: string[]) =>
    cells.map((c, i) => c + ' '.repeat(Math.max(0, widths[i]! - visible(c)))).join('  ');
  return [line(headers.map((h) => paint('bold', h))), ...rows.map(line)].join('\n');
}
