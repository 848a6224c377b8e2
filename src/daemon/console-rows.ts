/**
 * The rows the console's HTTP reads answer with, shared by the daemon that writes them and the page that reads
 * them. Types only, importing nothing, so the browser bundle takes no engine code from here.
 */

/** What the console shows beside any row of an automation: its name, its schedule's zone and its tags. */
export interface DefinitionFacts {
  automationId: string;
  name: string;
  lifecycleState: string;
  revision: number;
  timezone: string;
  /** The schedule as written: the v1 trigger's rule, or the schedule extension's cron expression or rule. */
  schedule: string;
  /**
   * This engine's policies beyond the contract's, when the definition has any: its overlap policy
   * (x-coven-automata.overlap.v1) and its flow-control tags, priority and rate limit (x-coven-automata.limits.v1).
   */
  policies?: string;
  tags: string[];
}
