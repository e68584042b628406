// bench/ui_trace_page.mjs BASE_URL RUNS [UNTIL_MS] — opens /ui/trace/{id} for RUNS traces of
// BASE_URL's store in headless chromium, each in a fresh page, and prints the time from the
// navigation to the waterfall drawn (the page's data-rendered-ms) as RESULT lines. The traces:
// the newest, or with UNTIL_MS the newest of those started by then (the oldest partitions).
// Run by bench/ui_trace_page.sh.
import { chromium } from 'playwright-core';

const [base, runs = '5', until] = process.argv.slice(2);
const traces = (await (await fetch(`${base}/api/v1/traces?limit=${runs}${until ? `&until=${until}` : ''}`)).json()).traces;
if (!traces.length) throw new Error('the store has no trace');
const browser = await chromium.launch({ executablePath: process.env.INFERTEL_CHROMIUM ?? '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
const times = [];
try {
  for (const t of traces) {
    const page = await browser.newPage();
    await page.goto(`${base}/ui/trace/${t.trace_id}`);
    await page.waitForSelector('body[data-rendered-ms]', { timeout: 30000 });
    const rows = await page.locator('.waterfall .row[data-span]').count();
    const ms = Number(await page.getAttribute('body', 'data-rendered-ms'));
    console.log(`trace ${t.trace_id}: ${rows} spans drawn ${ms.toFixed(1)} ms after the navigation`);
    times.push(ms);
    await page.close();
  }
} finally {
  await browser.close();
}
const sorted = [...times].sort((a, b) => a - b);
console.log(`RESULT first_ms=${times[0].toFixed(1)}`);
console.log(`RESULT median_ms=${sorted[Math.floor(sorted.length / 2)].toFixed(1)}`);
console.log(`RESULT max_ms=${sorted.at(-1).toFixed(1)}`);
