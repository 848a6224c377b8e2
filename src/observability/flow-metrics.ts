import { Gauge, type Registry } from 'prom-client';
import type { FlowReport } from '../domain/flow-report.js';

/** The flow-control gauges (x-coven-automata.limits.v1), one series per gate. */
export function flowGateGauges(registers: Registry[], collect: () => Promise<void>) {
  const gauge = (name: string, help: string) => new Gauge({ name, help, labelNames: ['gate'], registers, collect });
  return {
    inFlight: gauge(
      'coven_flow_gate_in_flight',
      'Sessions in flight that a cap counts (gate runtime:<id> or tag:<tag>)',
    ),
    cap: gauge('coven_flow_gate_cap', 'The cap on sessions in flight of a gate'),
    rateUsed: gauge('coven_flow_gate_rate_used', "Claims inside a gate's rate window now"),
    rateLimit: gauge('coven_flow_gate_rate_limit', "The claims a gate's rate window lets through"),
    waiting: gauge(
      'coven_flow_gate_waiting',
      'Eligible occurrences waiting at a gate (held back by its cap, rate limit or better-ranked work)',
    ),
    closed: gauge('coven_flow_gate_closed', '1 while a gate turns the next claim away (cap full or rate spent)'),
  };
}

export type FlowGateGauges = ReturnType<typeof flowGateGauges>;

/** Sets every gate's series from `report`; gates no longer limited lose theirs. */
export function setFlowGates(gauges: FlowGateGauges, report: FlowReport): void {
  for (const gauge of Object.values(gauges)) gauge.reset();
  for (const gate of report.gates) {
    const labels = { gate: gate.key };
    if (gate.inFlight !== undefined) {
      gauges.inFlight.set(labels, gate.inFlight.count);
      gauges.cap.set(labels, gate.inFlight.cap);
    }
    if (gate.rate !== undefined) {
      gauges.rateUsed.set(labels, gate.rate.used);
      gauges.rateLimit.set(labels, gate.rate.limit);
    }
    gauges.waiting.set(labels, gate.waiting.length);
    gauges.closed.set(labels, gate.closed ? 1 : 0);
  }
}
