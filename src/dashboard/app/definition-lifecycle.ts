import { act, type Dashboard } from './context.js';
import { el } from './dom.js';
import { machineOf } from './machine-diagram.js';

/** The command an operator sends for each definition.v1 event the command handler commits. */
const COMMANDS: Record<string, { command: string; verb: string }> = {
  definition_activated: { command: 'definition.activate.v1', verb: 'activate' },
  definition_paused: { command: 'definition.pause.v1', verb: 'pause' },
  definition_disabled: { command: 'definition.disable.v1', verb: 'disable' },
  definition_reenabled: { command: 'x-coven-automata.definition.reenable.v1', verb: 're-enable' },
  definition_tombstoned: { command: 'definition.tombstone.v1', verb: 'tombstone' },
};

export interface EditedDefinition {
  automationId: string;
  revision: number;
  lifecycleState: string;
}

/** Tombstoning cannot be undone: the button asks for the automation's id typed out first. */
function tombstoneForm(dashboard: Dashboard, d: EditedDefinition, done: () => void): HTMLFormElement {
  const confirm = el('input', {
    'data-testid': 'tombstone-confirm',
    placeholder: `type ${d.automationId} to tombstone`,
    required: true,
  });
  const form = el(
    'form',
    { class: 'inline' },
    confirm,
    el('button', { type: 'submit', 'data-testid': 'lifecycle-tombstone' }, 'tombstone'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (confirm.value !== d.automationId) {
      dashboard.notify(`tombstone ${d.automationId}: type the automation id to confirm; nothing sent`, 'error');
      return;
    }
    void send(dashboard, d, COMMANDS.definition_tombstoned!, done);
  });
  return form;
}

async function send(
  dashboard: Dashboard,
  d: EditedDefinition,
  spec: { command: string; verb: string },
  done: () => void,
): Promise<void> {
  const answer = await act(
    dashboard,
    `${spec.verb} ${d.automationId}`,
    spec.command,
    { automationId: d.automationId },
    { expectedRevision: d.revision },
  );
  if (answer !== undefined) done();
}

/**
 * The lifecycle actions the definition machine offers from the definition's state: one button per
 * transition the command handler may commit from there (a revise is the editor's save), sent at the revision
 * the editor shows. The engine still decides: a refusal (a guard, a stale revision) is its typed error.
 */
export function lifecycleActions(dashboard: Dashboard, d: EditedDefinition, done: () => void): HTMLElement {
  const offered = machineOf('definition')
    .transitions.filter((t) => t.from === d.lifecycleState && t.actor === 'command_handler')
    .map((t) => t.on)
    .filter((on, i, all) => COMMANDS[on] !== undefined && all.indexOf(on) === i);
  const buttons = offered
    .filter((on) => on !== 'definition_tombstoned')
    .map((on) => {
      const spec = COMMANDS[on]!;
      return el(
        'button',
        { 'data-testid': `lifecycle-${spec.verb}`, onclick: () => void send(dashboard, d, spec, done) },
        spec.verb,
      );
    });
  return el(
    'div',
    { class: 'inline', 'data-testid': 'lifecycle-actions' },
    el('strong', {}, 'lifecycle: '),
    ...buttons,
    offered.includes('definition_tombstoned') ? tombstoneForm(dashboard, d, done) : null,
    offered.length === 0 ? el('span', { class: 'muted' }, `none from ${d.lifecycleState}`) : null,
  );
}
