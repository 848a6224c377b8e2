import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { dashboardRoutes, missingBuildSentence } from '../../src/daemon/dashboard-routes.js';
import { dashboardWorld, ensureDashboardBuilt, type DashboardWorld } from './world.js';

describe('the dashboard plugin serves the built page over loopback TCP', () => {
  let world: DashboardWorld | undefined;
  afterEach(async () => {
    await world?.close();
    world = undefined;
  });

  test('/ and its assets: no token needed (static reads), locked-down headers, nothing from elsewhere', async () => {
    const root = ensureDashboardBuilt();
    world = await dashboardWorld([dashboardRoutes({ root })]);
    const page = await fetch(`${world.url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    expect(page.headers.get('cache-control')).toBe('no-cache');
    const html = await page.text();
    expect(html).not.toMatch(/(src|href)="https?:/);
    const assets = readdirSync(join(root, 'assets'));
    expect(assets.some((name) => name.endsWith('.js'))).toBe(true);
    for (const name of assets) {
      expect(html).toContain(`/assets/${name}`);
      const asset = await fetch(`${world.url}/assets/${name}`);
      expect(asset.status).toBe(200);
      expect(asset.headers.get('cache-control')).toContain('immutable');
      expect(await asset.text()).not.toMatch(/https?:\/\/(?!127\.0\.0\.1|localhost|www\.w3\.org)[a-z]/i);
    }
  }, 60_000);

  test('an unknown path is still the daemon typed NOT_FOUND, not a file lookup', async () => {
    world = await dashboardWorld([dashboardRoutes({ root: ensureDashboardBuilt() })]);
    const missing = await fetch(`${world.url}/assets/nope.js`);
    expect(missing.status).toBe(404);
    const body = (await missing.json()) as { error?: unknown };
    // The daemon answers unknown routes with a typed error (inside a rejected response when it wraps one).
    expect(body.error ?? body).toMatchObject({ code: 'NOT_FOUND', httpStatus: 404 });
  }, 60_000);

  test('without a build, / and /assets answer 503 with the sentence saying to run npm run build:dashboard', async () => {
    const root = join('/nonexistent', 'coven-dashboard-build');
    world = await dashboardWorld([dashboardRoutes({ root })]);
    for (const path of ['/', '/assets/index.js']) {
      const answer = await fetch(`${world.url}${path}`);
      expect(answer.status).toBe(503);
      const text = await answer.text();
      expect(text).toBe(missingBuildSentence(root));
      expect(text).toContain('npm run build:dashboard');
    }
  }, 60_000);
});
