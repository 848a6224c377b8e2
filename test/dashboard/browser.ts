import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

/** Debian's chromium package (the browser: a Playwright browser download cannot work offline). */
export const CHROMIUM = process.env.COVEN_CHROMIUM ?? '/usr/bin/chromium';

/** Why the browser test cannot run here, or undefined when it can. */
export const browserMissing: string | undefined = existsSync(CHROMIUM)
  ? undefined
  : `no browser at ${CHROMIUM}: install Debian's chromium (apt-get install -y chromium) or set COVEN_CHROMIUM`;

/** Under CI a missing browser is a failure, never a skip (`.ci/run` installs it). */
export const inCi = process.env.CI === 'true';

const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface TestBrowser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** What a test may set of the browser: the viewer's time zone, the window's size. */
export interface BrowserOptions {
  timezoneId?: string;
  viewport?: { width: number; height: number };
}

/** Headless chromium on a fresh profile folder, removed on close. */
export async function launchBrowser(options: BrowserOptions = {}): Promise<TestBrowser> {
  const profile = mkdtempSync(join(tmpdir(), 'coven-chromium-'));
  // A persistent context is how Playwright takes a --user-data-dir: the profile is this fresh folder.
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: options.viewport ?? { width: 1400, height: 1000 },
    ...(options.timezoneId === undefined ? {} : { timezoneId: options.timezoneId }),
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
