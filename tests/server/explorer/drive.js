// Drives the explorer in headless Chromium (playwright-core) as a person would, against a
// running server: node drive.js URL SCREENSHOT_DIR. Prints one JSON object of what it
// measured; exits non-zero, saying which step failed, on the first failure.
'use strict';

const { chromium } = require('playwright-core');

const [url, shots] = process.argv.slice(2);
const executablePath = process.env.ECSQL_CHROMIUM || '/usr/bin/chromium';
const STEP = 30000;

async function main() {
  const browser = await chromium.launch({
    executablePath,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const page = await browser.newPage({ viewport: { width: 1400, height: 1800 } });
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  let step = 'open';
  // A failed load is also a console error: the answers themselves are looked at below.
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(`console: ${m.text()}`);
  });
  // No request fails but the one the console step makes fail on purpose.
  page.on('response', async (r) => {
    if (r.status() >= 400 && step !== 'the console shows an error at its position') {
      problems.push(`${r.status()} for ${r.request().method()} ${r.url()} in step "${step}": ${await r.text().catch(() => '')}`);
    }
  });
  const out = {};
  try {
    await page.goto(url);
    await page.waitForSelector('body[data-ready="1"]', { timeout: STEP });

    step = 'the entity list filters by component';
    await page.click('#components [data-component="Name"]');
    await page.waitForFunction(() => /of 3 entities/.test(document.getElementById('page-info').textContent), null, { timeout: STEP });
    step = 'the entity list filters by search';
    await page.fill('#search', 'troll');
    await page.waitForFunction(() => {
      const rows = document.querySelectorAll('#entity-table tbody tr');
      return rows.length === 1 && rows[0].textContent.includes('troll');
    }, null, { timeout: STEP });
    step = 'the entity list searches every TEXT field when no component is picked';
    await page.click('#components [data-component="Name"]');
    await page.waitForFunction(() => {
      const rows = document.querySelectorAll('#entity-table tbody tr');
      return rows.length === 1 && rows[0].textContent.includes('2') && /of 1 entity$/.test(document.getElementById('page-info').textContent);
    }, null, { timeout: STEP });
    step = 'the entity list filters by value';
    await page.fill('#search', '');
    await page.selectOption('#filter-field', 'Team.n');
    await page.selectOption('#filter-op', '=');
    await page.fill('#filter-value', '2');
    await page.click('#filter-add');
    await page.waitForFunction(() => /of 33333 entities/.test(document.getElementById('page-info').textContent), null, { timeout: STEP });
    out.page_after_filter = await page.textContent('#page-info');
    step = 'the entity list pages';
    await page.click('#next');
    await page.waitForFunction(() => /^101–200 of 33333/.test(document.getElementById('page-info').textContent), null, { timeout: STEP });
    await page.locator('#entities').screenshot({ path: `${shots}/entities.png` });

    step = 'the inspector edits a value';
    await page.click('#filters .chip');
    await page.click('#components [data-component="Name"]');
    await page.fill('#search', 'troll');
    await page.waitForFunction(() => {
      const rows = document.querySelectorAll('#entity-table tbody tr');
      return rows.length === 1 && rows[0].textContent.includes('troll');
    }, null, { timeout: STEP });
    await page.click('#entity-table tbody tr');
    await page.waitForSelector('#f-Health-hp', { timeout: STEP });
    out.troll = await page.textContent('#inspected');
    await page.fill('#f-Health-hp', '77');
    await page.press('#f-Health-hp', 'Enter');
    await page.waitForFunction(() => /UPDATE Health SET hp = \?1 WHERE id = \?2.*1 updated/.test(document.getElementById('edit-log').textContent), null, { timeout: STEP });
    await page.waitForFunction(() => document.getElementById('f-Health-hp').value === '77', null, { timeout: STEP });
    await page.locator('#inspector').screenshot({ path: `${shots}/inspector.png` });

    step = 'the console runs a query';
    await page.fill('#sql', 'SELECT id, Position.x FROM Position ORDER BY id LIMIT 5');
    await page.click('#run');
    await page.waitForFunction(() => document.querySelectorAll('#console-table tbody tr').length === 5, null, { timeout: STEP });
    step = 'the console shows an error at its position';
    await page.fill('#sql', 'SELECT id,\n  Position.nope FROM Position');
    await page.press('#sql', 'Control+Enter');
    await page.waitForSelector('#console-error:not([hidden]) pre.spot', { timeout: STEP });
    out.console_error = await page.textContent('#console-error');
    const [shown, caret] = (await page.textContent('#console-error pre.spot')).split('\n');
    const marked = await page.textContent('#console-error mark');
    if (shown !== '  Position.nope FROM Position' || caret.indexOf('^') !== shown.indexOf('nope') || marked !== 'nope') {
      throw new Error(`the spot is not marked: ${JSON.stringify(out.console_error)}`);
    }
    await page.locator('#console').screenshot({ path: `${shots}/console-error.png` });
    step = 'the console explains a query';
    await page.fill('#sql', 'SELECT id FROM Position WHERE Position.x > 10');
    await page.click('#explain');
    await page.waitForSelector('#console-plan:not([hidden])', { timeout: STEP });
    out.plan = await page.textContent('#console-plan');
    if (!/Position/.test(out.plan)) throw new Error(`no plan: ${out.plan}`);
    await page.locator('#console').screenshot({ path: `${shots}/console-explain.png` });

    step = 'the live view samples a large world';
    await page.waitForFunction(() => /\(1 entity in 11\)/.test(document.getElementById('plot-info').textContent), null, { timeout: STEP });
    out.sampled_points = await page.evaluate(() => window.ecsqlExplorer.plotPoints);
    if (out.sampled_points < 8000 || out.sampled_points > 10500) throw new Error(`${out.sampled_points} points sampled`);
    step = 'the live view shows every point';
    await page.check('#plot-all');
    await page.waitForFunction(() => window.ecsqlExplorer.plotPoints === 100003, null, { timeout: STEP });
    const first = await page.evaluate(() => ({ tick: window.ecsqlExplorer.plotTick, image: document.getElementById('plot').toDataURL() }));
    step = 'the live view\'s points move after ticks';
    await page.waitForFunction((t) => window.ecsqlExplorer.plotTick >= t + 3, first.tick, { timeout: STEP });
    await page.waitForTimeout(200);
    const later = await page.evaluate(() => ({ tick: window.ecsqlExplorer.plotTick, image: document.getElementById('plot').toDataURL() }));
    if (later.image === first.image) throw new Error(`the plot did not change from tick ${first.tick} to ${later.tick}`);
    // Measured over 3 s with the page open and the world ticking.
    await page.evaluate(() => { window.ecsqlExplorer.plotFrameMs.length = 0; window.ecsqlExplorer.plotFrames = 0; window.ecsqlExplorer.mark = { batches: window.ecsqlExplorer.plotBatches, tick: window.ecsqlExplorer.plotTick, at: performance.now() }; });
    await page.waitForTimeout(3000);
    out.live = await page.evaluate(() => {
      const s = window.ecsqlExplorer;
      const ms = [...s.plotFrameMs].sort((a, b) => a - b);
      const seconds = (performance.now() - s.mark.at) / 1000;
      return {
        points: s.plotPoints,
        frames_per_second: s.plotFrames / seconds,
        draw_ms_median: ms[Math.floor(ms.length / 2)],
        draw_ms_p95: ms[Math.floor(ms.length * 0.95)],
        batches_per_second: (s.plotBatches - s.mark.batches) / seconds,
        ticks_per_second: (s.plotTick - s.mark.tick) / seconds,
      };
    });
    // The page's own frames: how long a frame takes while the view follows the world.
    out.page_frames = await page.evaluate(() => new Promise((resolve) => {
      const times = [];
      let last = performance.now();
      const tick = (now) => {
        times.push(now - last);
        last = now;
        if (times.length < 120) requestAnimationFrame(tick);
        else {
          times.sort((a, b) => a - b);
          resolve({ median_ms: times[60], p95_ms: times[114], max_ms: times[119] });
        }
      };
      requestAnimationFrame(tick);
    }));
    await page.locator('#live').screenshot({ path: `${shots}/live.png` });

    step = 'the systems plot fills';
    await page.waitForFunction(() => {
      const legend = document.getElementById('systems-legend').textContent;
      return /movement \((\d+) runs\)/.test(legend) && Number(legend.match(/movement \((\d+) runs\)/)[1]) >= 20;
    }, null, { timeout: STEP });
    const inked = await page.evaluate(() => {
      const c = document.getElementById('systems-plot');
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
      return n;
    });
    if (inked < 500) throw new Error(`the systems plot is nearly blank (${inked} pixels drawn)`);
    out.systems_pixels = inked;
    await page.locator('#systems').screenshot({ path: `${shots}/systems.png` });

    step = 'relations show as a tree';
    await page.waitForSelector('#rel-tree details', { timeout: STEP });
    await page.click('#rel-tree details > summary');
    await page.waitForSelector('#rel-tree details[open] details, #rel-tree details[open] .leaf', { timeout: STEP });
    out.relations = await page.textContent('#rel-tree');
    await page.locator('#relations').screenshot({ path: `${shots}/relations.png` });
    await page.screenshot({ path: `${shots}/explorer.png`, fullPage: true });

    if (problems.length) {
      step = 'no errors in the page';
      throw new Error(problems.join('\n'));
    }
  } catch (e) {
    await page.screenshot({ path: `${shots}/failed.png`, fullPage: true }).catch(() => {});
    console.error(`step "${step}" failed: ${e.message}\n${problems.join('\n')}`);
    await browser.close();
    process.exit(1);
  }
  await browser.close();
  console.log(JSON.stringify(out));
}

main().catch((e) => { console.error(e.stack || String(e)); process.exit(2); });
