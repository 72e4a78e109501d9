// Headless Chromium through puppeteer-core: the page, what went wrong on it
// (console errors, page errors, failed requests, HTTP errors), and the
// dashboard's figures as its data-* attributes show them.
import puppeteer from 'puppeteer-core';

export async function launch() {
  return puppeteer.launch({
    executablePath: process.env.ARBITER_CHROMIUM,
    headless: true,
    // --no-sandbox: CI runs as root, where Chromium's sandbox will not start.
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
}

// Records every problem the page has; `phase` is stamped on each, so the
// test can allow the 401s before the token was given.
export function recordProblems(page) {
  const problems = [];
  const state = { phase: 'start' };
  const add = (kind, text, url = '', status = 0) => problems.push({ phase: state.phase, kind, text, url, status });
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warn') add(`console.${m.type()}`, m.text(), m.location()?.url ?? '');
  });
  page.on('pageerror', (e) => add('pageerror', String(e)));
  page.on('requestfailed', (r) => add('requestfailed', r.failure()?.errorText ?? '', r.url()));
  page.on('response', (r) => {
    if (r.status() >= 400) add('http', `${r.status()} ${r.url()}`, r.url(), r.status());
  });
  return { problems, state };
}

// The dashboard's figures, read in one task (never half of one refresh and
// half of the next): for each panel named, its rows, each with its data-*
// attributes and its figures (data-field -> { value: data-value or null, text }).
export async function readPanels(page, names) {
  return page.evaluate((panelNames) => {
    const rowsOf = (panel) =>
      [...document.querySelectorAll(`[data-panel="${panel}"] tbody tr`)].map((tr) => {
        const fields = {};
        for (const td of tr.querySelectorAll('[data-field]')) {
          fields[td.dataset.field] = { value: td.dataset.value ?? null, text: td.textContent };
        }
        return { data: { ...tr.dataset }, fields };
      });
    return Object.fromEntries(panelNames.map((p) => [p, rowsOf(p)]));
  }, names);
}
