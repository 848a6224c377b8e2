import { DefinitionState } from '../../../machines/states.js';
import type { CommandResponse } from './api.js';
import { failureText, type Dashboard } from './context.js';
import { el, fill, stateBadge } from './dom.js';
import { authorFields, fieldChanges, sealedBody, type FieldChange } from './definition-diff.js';
import { lifecycleActions } from './definition-lifecycle.js';
import { schedulePreview } from './schedule-preview.js';
import { chartButton } from './statechart.js';

/** The DOM event an edit button sends up the page; the editor opens the definition it names. */
export const EDIT_EVENT = 'coven:edit';

/** Typing settles this long before the preview asks the daemon again. */
const PREVIEW_DEBOUNCE_MS = 300;

/** A new definition starts from this: the shape of examples/daily-notes.json, daily at 09:00 UTC. */
const TEMPLATE = {
  schemaVersion: 'coven.automations.v1',
  automationId: 'new-automation',
  display: { name: 'New automation' },
  trigger: { variant: 'schedule', version: 1, schedule: { rrule: 'FREQ=DAILY;BYHOUR=9', timezone: 'utc' } },
  conditions: [],
  action: { variant: 'familiarInvocation', version: 1, prompt: 'Say what to do.' },
  binding: {
    familiarBindingPolicy: 'exact',
    familiarId: 'charm',
    authority: { approvalPolicyRef: 'policy://authority/familiars/charm' },
  },
  runtimeRequirements: { runtimeId: 'coven-code', capabilities: ['sessions.launch'] },
  policies: {
    timeout: { perRunMinutes: 30 },
    retry: { maxAttempts: 3, backoffPolicy: 'exponential', retryableClasses: ['transient_dispatch'] },
    concurrency: { overlap: 'forbid' },
    misfire: { disposition: 'latest' },
    retention: { occurrenceHistory: { classification: 'standard' } },
  },
};

/** The definition being edited, as definition.get.v1 answered it. */
interface Base {
  automationId: string;
  revision: number;
  lifecycleState: string;
  definition: Record<string, unknown>;
}

/**
 * A button that opens a definition in the editor.
 *
 * @example
 * ```ts
 * cell.append(editButton('daily-notes'));
 * ```
 */
export function editButton(automationId: string): HTMLButtonElement {
  const button = el('button', { 'data-testid': `edit-${automationId}` }, 'edit');
  button.addEventListener('click', () =>
    button.dispatchEvent(new CustomEvent<string>(EDIT_EVENT, { detail: automationId, bubbles: true })),
  );
  return button;
}

/** The state a revise writes: where a paused or active definition is; a draft or invalid one becomes paused. */
const revisedState = (state: string): string =>
  state === DefinitionState.active ? DefinitionState.active : DefinitionState.paused;

function diffView(changes: FieldChange[]): HTMLElement {
  if (changes.length === 0) return el('p', { class: 'muted', 'data-testid': 'diff' }, 'no change yet');
  return el(
    'ul',
    { class: 'diff mono', 'data-testid': 'diff' },
    ...changes.map((c) =>
      el(
        'li',
        { 'data-path': c.path },
        el('strong', {}, c.path),
        ': ',
        c.before === undefined ? '' : el('span', { class: 'removed' }, c.before),
        c.before !== undefined && c.after !== undefined ? ' → ' : '',
        c.after === undefined ? ' (removed)' : el('span', { class: 'added' }, c.after),
      ),
    ),
  );
}

/**
 * The definition editor: a new definition (definition.create.v1, then a revise to `paused` so it is ready to
 * activate) or a new revision of an existing one (definition.revise.v1 at the revision shown), with the
 * schedule's next runs previewed and the field-by-field difference from the current revision shown before
 * saving, and the lifecycle actions the definition machine offers from its state. Every change is a command;
 * a refusal is shown as the engine's typed error.
 */
export class DefinitionEditor {
  private base: Base | undefined;
  private readonly text = el('textarea', { 'data-testid': 'editor-text', spellcheck: 'false' });
  private readonly side = el('div', {});
  private readonly result = el('p', { 'data-testid': 'editor-result', role: 'status' });
  private readonly ready = el('input', { type: 'checkbox', checked: true, 'data-testid': 'editor-ready' });
  private timer: number | undefined;
  private lifecycle = el('div', {});

  constructor(
    private readonly dashboard: Dashboard,
    private readonly target: HTMLElement,
  ) {
    this.text.addEventListener('input', () => this.changed());
    document.addEventListener(EDIT_EVENT, (event) => void this.open((event as CustomEvent<string>).detail));
    this.idle();
  }

  private idle(): void {
    fill(
      this.target,
      el('button', { 'data-testid': 'new-definition', onclick: () => this.openNew() }, 'new definition'),
      el('span', { class: 'muted' }, ' or edit one from the definitions table.'),
    );
  }

  openNew(): void {
    this.base = undefined;
    this.text.value = JSON.stringify(TEMPLATE, null, 2);
    this.result.textContent = '';
    this.layout();
  }

  async open(automationId: string): Promise<void> {
    try {
      this.base = await this.dashboard.api.read<Base>('definition.get.v1', { automationId });
    } catch (error) {
      this.dashboard.notify(`edit ${automationId}: ${failureText(error)}`, 'error');
      return;
    }
    this.text.value = JSON.stringify(authorFields(this.base.definition), null, 2);
    this.layout();
    this.target.scrollIntoView({ block: 'nearest' });
  }

  /** Follows the definition's state and revision when something else changes it; the text being edited stays. */
  async refresh(): Promise<void> {
    if (this.base === undefined) return;
    try {
      const now = await this.dashboard.api.read<Base>('definition.get.v1', { automationId: this.base.automationId });
      if (now.revision !== this.base.revision || now.lifecycleState !== this.base.lifecycleState) {
        this.result.textContent =
          `${now.automationId} changed elsewhere: now revision ${now.revision} (${now.lifecycleState}); ` +
          `a save at revision ${this.base.revision} will be refused — reopen it to edit the new revision`;
        this.base = { ...this.base, lifecycleState: now.lifecycleState };
        this.renderLifecycle({ ...this.base, revision: now.revision });
      }
    } catch {
      // A tombstoned definition answers GONE_TOMBSTONED; its lifecycle buttons already say there is none.
    }
  }

  private layout(): void {
    const b = this.base;
    const heading =
      b === undefined
        ? el('h3', {}, 'new definition')
        : el(
            'h3',
            { 'data-testid': 'editor-heading' },
            el('code', {}, b.automationId),
            ` · revision ${b.revision} · `,
            stateBadge(b.lifecycleState),
            ' ',
            chartButton({ entity: 'definition', id: b.automationId }),
          );
    const save =
      b === undefined
        ? el(
            'span',
            {},
            el('label', {}, this.ready, ' then make it ready (revise to paused)'),
            ' ',
            el('button', { 'data-testid': 'editor-save', onclick: () => void this.save() }, 'create'),
          )
        : el(
            'button',
            { 'data-testid': 'editor-save', onclick: () => void this.save() },
            `save as revision ${b.revision + 1}`,
          );
    this.lifecycle = el('div', {});
    if (b !== undefined) this.renderLifecycle(b);
    fill(
      this.target,
      el(
        'div',
        { class: 'editor', 'data-testid': 'editor', 'data-mode': b === undefined ? 'create' : 'revise' },
        el('button', { 'data-testid': 'new-definition', onclick: () => this.openNew() }, 'new definition'),
        heading,
        this.lifecycle,
        el('div', { class: 'columns' }, el('div', {}, this.text), this.side),
        save,
        this.result,
      ),
    );
    this.changed(true);
  }

  private renderLifecycle(b: Base): void {
    fill(
      this.lifecycle,
      lifecycleActions(this.dashboard, b, () => void this.open(b.automationId)),
    );
  }

  /** The edited fields, or the JSON parser's complaint. */
  private fields(): Record<string, unknown> | string {
    try {
      const value = JSON.parse(this.text.value) as unknown;
      if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'the definition is a JSON object';
      return value as Record<string, unknown>;
    } catch (error) {
      return `not JSON: ${(error as Error).message}`;
    }
  }

  private changed(now = false): void {
    if (this.timer !== undefined) window.clearTimeout(this.timer);
    this.timer = window.setTimeout(() => void this.renderSide(), now ? 0 : PREVIEW_DEBOUNCE_MS);
  }

  private async renderSide(): Promise<void> {
    const fields = this.fields();
    if (typeof fields === 'string')
      return fill(this.side, el('p', { class: 'problem', 'data-testid': 'editor-problem' }, fields));
    const b = this.base;
    const diff =
      b === undefined
        ? null
        : el(
            'div',
            {},
            el('strong', { 'data-testid': 'next-revision' }, `revision ${b.revision} → ${b.revision + 1}`),
            diffView(fieldChanges(b.definition, fields)),
          );
    fill(this.side, diff, await schedulePreview(this.dashboard.api, fields));
  }

  private async command(command: string, body: Record<string, unknown>, expected?: number): Promise<CommandResponse> {
    return this.dashboard.api.command(
      command,
      { definition: body },
      { ...(expected === undefined ? {} : { expectedRevision: expected }), statement: `dashboard: ${command}` },
    );
  }

  /** Sends the create (and the revise to paused) or the revise; the outcome or the typed refusal shows here. */
  private async save(): Promise<void> {
    const fields = this.fields();
    if (typeof fields === 'string') return this.report(fields, 'error');
    const b = this.base;
    const id = String(fields.automationId);
    try {
      if (b === undefined) {
        await this.command('definition.create.v1', await sealedBody(fields, 1, 'draft'));
        let line = `created ${id}: revision 1 (draft)`;
        if (this.ready.checked) {
          const revised = await this.command('definition.revise.v1', await sealedBody(fields, 2, 'paused'), 1);
          line += ` → revision ${revised.revision ?? 2} (paused)`;
        }
        this.report(line, 'ok');
      } else {
        const state = revisedState(b.lifecycleState);
        const answer = await this.command(
          'definition.revise.v1',
          await sealedBody(fields, b.revision + 1, state),
          b.revision,
        );
        this.report(`saved ${id} as revision ${answer.revision ?? b.revision + 1} (${state})`, 'ok');
      }
      const line = this.result.textContent ?? '';
      await this.open(id);
      this.result.textContent = line;
    } catch (error) {
      this.report(`${b === undefined ? 'create' : 'save'} ${id} refused — ${failureText(error)}`, 'error');
    } finally {
      this.dashboard.refresh();
    }
  }

  private report(line: string, kind: 'ok' | 'error'): void {
    this.result.textContent = line;
    this.result.className = kind === 'ok' ? 'verified' : 'problem';
    this.result.dataset.kind = kind;
    this.dashboard.notify(line, kind);
  }
}
