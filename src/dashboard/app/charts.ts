import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { queryOf, type Filter } from './console-api.js';
import type { Dashboard } from './context.js';
import { el, fill } from './dom.js';
import { NewestRead } from './newest-read.js';

interface Counts {
  occurrences: Record<string, number>;
  runs: Record<string, number>;
  definitions: Record<string, number>;
}

interface OverTime {
  from: string;
  to: string;
  bucketMs: number;
  buckets: Array<Record<string, number | string>>;
}

const CHART_HEIGHT = 180;
const COLOURS = { ok: '#4caf7a', bad: '#e0605a', warn: '#e0a33a', muted: '#8b93a5', accent: '#9d7cf2' };

/** How runs-over-time groups the run states: what finished well, badly, was stopped, or is still going. */
const OUTCOMES: Array<{ label: string; states: string[]; colour: string }> = [
  { label: 'succeeded', states: ['succeeded'], colour: COLOURS.ok },
  { label: 'failed', states: ['failed', 'timed_out', 'ambiguous'], colour: COLOURS.bad },
  { label: 'cancelled', states: ['cancelled'], colour: COLOURS.muted },
  { label: 'in progress', states: ['accepted', 'running'], colour: COLOURS.warn },
];

const axis = { stroke: COLOURS.muted, grid: { stroke: '#2a2f3a', width: 1 }, ticks: { stroke: '#2a2f3a' } };

function widthOf(node: HTMLElement): number {
  return Math.max(240, Math.floor(node.getBoundingClientRect().width) - 4);
}

/** Occurrences per state, as bars: one bar per state of occurrence.v1 (zero included), a state's name under each. */
function countsChart(into: HTMLElement, counts: Record<string, number>): uPlot {
  const states = Object.keys(counts);
  const data: uPlot.AlignedData = [states.map((_, i) => i), states.map((s) => counts[s] ?? 0)];
  const options: uPlot.Options = {
    width: widthOf(into),
    height: CHART_HEIGHT,
    legend: { show: false },
    cursor: { show: false },
    scales: { x: { time: false, range: [-0.5, states.length - 0.5] }, y: { range: (_u, _min, max) => [0, max + 1] } },
    axes: [
      { ...axis, values: (_u, splits) => splits.map((i) => states[i] ?? ''), rotate: -30, size: 70, space: 10 },
      { ...axis, size: 60 },
    ],
    series: [
      {},
      {
        label: 'occurrences',
        fill: COLOURS.accent,
        stroke: COLOURS.accent,
        paths: uPlot.paths.bars!({ size: [0.7, 40] }),
        points: { show: false },
      },
    ],
  };
  return new uPlot(options, data, into);
}

/** Runs started per bucket of time, one line per outcome (the x axis in the viewer's zone). */
function overTimeChart(into: HTMLElement, answer: OverTime): uPlot {
  const xs = answer.buckets.map((b) => Date.parse(String(b.start)) / 1000);
  const series = OUTCOMES.map((o) => answer.buckets.map((b) => o.states.reduce((n, s) => n + Number(b[s] ?? 0), 0)));
  const options: uPlot.Options = {
    width: widthOf(into),
    height: CHART_HEIGHT,
    scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
    axes: [axis, { ...axis, size: 60 }],
    series: [
      {},
      ...OUTCOMES.map((o) => ({ label: o.label, stroke: o.colour, width: 2, points: { show: true, size: 4 } })),
    ],
  };
  return new uPlot(options, [xs, ...series], into);
}

/**
 * The charts of the find panel, for its filter: how many occurrences sit in each state, and how many runs
 * started per hour (or per bucket of the chosen range) by outcome. Both come from bounded aggregate reads
 * (`/api/v1/console/counts`, `/api/v1/console/runs-over-time`), never from the rows themselves.
 */
export class Charts {
  private plots: uPlot[] = [];
  private readonly reads = new NewestRead();

  constructor(
    private readonly dashboard: Dashboard,
    private readonly target: HTMLElement,
  ) {}

  async render(filter: Filter): Promise<void> {
    const scoped: Filter = { ...filter, state: undefined, q: undefined };
    const stillNewest = this.reads.begin();
    try {
      const [counts, overTime] = await Promise.all([
        this.dashboard.api.get<Counts>(`/api/v1/console/counts?${queryOf(scoped)}`),
        this.dashboard.api.get<OverTime>(`/api/v1/console/runs-over-time?${queryOf(scoped)}`),
      ]);
      if (!stillNewest()) return;
      if (counts === undefined || overTime === undefined) return fill(this.target);
      for (const plot of this.plots) plot.destroy();
      const countsBox = el('div', { class: 'chart', 'data-testid': 'chart-counts' });
      const timeBox = el('div', { class: 'chart', 'data-testid': 'chart-runs-over-time' });
      countsBox.dataset.counts = JSON.stringify(counts.occurrences);
      // The canvas says nothing to a screen reader: the figures go in its label.
      const perState = Object.entries(counts.occurrences).filter(([, n]) => n > 0);
      countsBox.setAttribute('role', 'img');
      countsBox.setAttribute(
        'aria-label',
        `occurrences per state: ${perState.map(([state, n]) => `${state} ${n}`).join(', ') || 'none'}`,
      );
      timeBox.dataset.total = String(
        overTime.buckets.reduce(
          (n, b) => n + OUTCOMES.flatMap((o) => o.states).reduce((m, s) => m + Number(b[s] ?? 0), 0),
          0,
        ),
      );
      const runs = Object.entries(counts.runs)
        .filter(([, n]) => n > 0)
        .map(([state, n]) => `${state} ${n}`);
      fill(
        this.target,
        el('h3', {}, 'Occurrences per state'),
        countsBox,
        el(
          'p',
          { class: 'muted', 'data-testid': 'run-counts' },
          `runs: ${runs.length === 0 ? 'none' : runs.join(', ')}`,
        ),
        el('h3', {}, 'Runs started over time'),
        timeBox,
      );
      this.plots = [countsChart(countsBox, counts.occurrences), overTimeChart(timeBox, overTime)];
    } catch (error) {
      if (stillNewest())
        fill(this.target, el('p', { class: 'not-verified' }, `charts unavailable: ${(error as Error).message}`));
    }
  }
}
