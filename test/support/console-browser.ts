// What the browser tests of the operator console share: the system's Chromium and how it is
// started, a call to the API with a key, axe-core run in the page under the console's own CSP, and
// the teardown that leaves nothing behind.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import axe from 'axe-core';
import type { startService } from './process.ts';
import { chromium } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export async function call(
  baseUrl: string,
  key: string,
  method: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const response = await fetch(baseUrl + url, {
    method,
    headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, text, json: text ? JSON.parse(text) : undefined };
}

/**
 * axe-core's violations on the screen shown (its id and impact, and the elements), run in the page
 * through the browser's own evaluation, so the console's CSP stays as strict as it is served.
 */
export async function accessibilityViolations(page: {
  evaluate<R>(script: string): Promise<R>;
}): Promise<Array<{ id: string; impact: string | null; nodes: string[] }>> {
  return page.evaluate(`(async () => {
    ${axe.source}
    const result = await axe.run(document.querySelector('#screen'), { resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(' ')) }));
  })()`);
}

/** Closes the browser, stops the service (it must exit 0), drops its database and removes the folders. */
export async function tearDown(run: {
  context: { close(): Promise<void> };
  service: Awaited<ReturnType<typeof startService>>;
  database: { drop(): Promise<void> } | undefined;
  profile: string;
  dataDir: string;
}): Promise<void> {
  await run.context.close();
  const code = await run.service.stop('SIGTERM');
  await run.database?.drop();
  rmSync(run.profile, { recursive: true, force: true });
  rmSync(run.dataDir, { recursive: true, force: true });
  assert.equal(code, 0, run.service.output());
}

/** The system's Chromium, headless, on a profile directory of the test's own (never a downloaded browser). */
export function launchConsoleBrowser(profile: string) {
  return chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 800 },
    acceptDownloads: true,
  });
}
