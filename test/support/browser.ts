/**
 * A real browser for the console's tests (test/browser/) and its screenshots: Debian's chromium (apt package
 * `chromium`, which .ci/run installs) driven by playwright-core, which downloads no browser of its own. Playwright
 * promises nothing for a browser it did not bundle, so playwright-core is pinned and the flows kept few.
 */
import axe from 'axe-core';
import type { AxeResults } from 'axe-core';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import { findTool, missingToolsProblem } from './tools';

/**
 * The browser's own zone: not UTC, so a time the console left to the browser would read differently from the
 * UTC it must show. Fixed, so pages and screenshots are the same on every machine.
 */
export const BROWSER_TIMEZONE = 'America/New_York';

/** Debian's chromium, headless; throws at once, naming the apt package, when it is not installed. */
export async function launchChromium(): Promise<Browser> {
  const executablePath = findTool('chromium');
  if (executablePath === null) throw new Error(missingToolsProblem(['chromium']) ?? 'chromium not found');
  return chromium.launch({
    executablePath,
    // No sandbox: CI runs as root in a container, where chromium's sandbox cannot start. The others keep a test
    // run from reaching out (updates, component downloads) or asking for a GPU.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
    ],
  });
}

/** What a page did that it must not: a Content-Security-Policy violation, a dialog, an uncaught error. */
export interface PageProblems {
  csp: string[];
  dialogs: string[];
  errors: string[];
}

/**
 * A browsing context (one person's cookies) that records every problem of its pages. CSP violations are seen
 * twice over: the browser's own report in the console (also with JavaScript off) and, with JavaScript on, the
 * `securitypolicyviolation` events. Dialogs (an `alert` an injected script would open) are dismissed and kept.
 */
export async function watchedContext(
  browser: Browser,
  options: BrowserContextOptions = {},
): Promise<{ context: BrowserContext; problems: PageProblems }> {
  const context = await browser.newContext({ timezoneId: BROWSER_TIMEZONE, locale: 'en-GB', ...options });
  const problems: PageProblems = { csp: [], dialogs: [], errors: [] };
  // Page code as text: the project is compiled without the DOM's types.
  await context.addInitScript({
    content: `document.addEventListener('securitypolicyviolation', (event) =>
      console.error('securitypolicyviolation: ' + event.violatedDirective + ' blocked ' + event.blockedURI));`,
  });
  context.on('console', (message) => {
    if (/Content Security Policy|securitypolicyviolation/i.test(message.text())) problems.csp.push(message.text());
  });
  context.on('dialog', (dialog) => {
    problems.dialogs.push(`${dialog.type()}: ${dialog.message()}`);
    void dialog.dismiss();
  });
  context.on('weberror', (error) => problems.errors.push(error.error().message));
  return { context, problems };
}

/** Serious and critical accessibility violations axe-core finds on the page as it is, one line each. */
export async function accessibilityProblems(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol, which the page's CSP (no script at all) does not govern.
  if (!(await page.evaluate<boolean>("typeof window.axe === 'object'"))) await page.evaluate(axe.source);
  const results = await page.evaluate<AxeResults>("window.axe.run(document, { resultTypes: ['violations'] })");
  return results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help}: ${v.nodes.map((n) => n.target.join(' ')).join('; ')}`);
}
