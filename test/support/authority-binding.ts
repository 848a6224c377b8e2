/** The authority binding the authority tests give `daily`: familiar `charm` revision 1 on coven-code. */
export function dailyBinding(extra: Record<string, unknown> = {}) {
  return {
    automationId: 'daily',
    principalId: 'principal-1',
    familiarId: 'charm',
    familiarRevision: 1,
    runtime: 'coven-code',
    requiredCapabilities: ['session.create'],
    ...extra,
  };
}
