// The ecsql explorer: a page over the server's JSON API (/api/...). No framework, no
// build step. Every answer of the API is one whole tick; the live view and the systems
// panel follow the world as it ticks.
'use strict';

const $ = (id) => document.getElementById(id);

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === 'class') node.className = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null) node.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c !== undefined && c !== null) node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

// What the page measured, for a person or a test to read.
const stats = { plotFrames: 0, plotFrameMs: [], plotPoints: 0, plotBatches: 0, plotTick: null, edits: 0 };
window.ecsqlExplorer = stats;

class ApiError extends Error {
  constructor(status, error) {
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.error = error;
  }
}

async function get(path) {
  const response = await fetch(path, { headers: { Accept: 'application/json' } });
  const body = await response.json();
  if (!response.ok) throw new ApiError(response.status, body.error || {});
  return body;
}

// A parameter that is an integer too large for JavaScript's numbers, sent as its digits.
class BigInteger {
  constructor(digits) { this.digits = digits; }
}

async function query(sql, params, pageSize) {
  const big = [];
  const plain = (params || []).map((p) => {
    if (!(p instanceof BigInteger)) return p;
    big.push(p.digits);
    return `\u0000big${big.length - 1}`;
  });
  let request = JSON.stringify({ sql, params: plain, page_size: pageSize || 1000 });
  big.forEach((digits, i) => { request = request.replace(JSON.stringify(`\u0000big${i}`), digits); });
  const response = await fetch('/api/query', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    body: request,
  });
  const answer = await response.json();
  if (!response.ok) throw new ApiError(response.status, answer.error || {});
  return answer;
}

// A name as SQL reads it: quoted unless a plain word.
function ident(name) {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? name : '"' + name.replace(/"/g, '""') + '"';
}

function cellText(v) {
  if (v === null) return 'NULL';
  if (typeof v === 'number' && !Number.isInteger(v)) return String(Math.round(v * 1e6) / 1e6);
  return String(v);
}

// A table of rows; an ENTITY value is a link to the inspector.
function fillTable(table, columns, rows, onRow) {
  const cell = (v, i) => {
    if (columns[i] && columns[i].type === 'ENTITY' && v !== null) {
      const link = el('a', { class: 'entity' }, cellText(v));
      link.addEventListener('click', (e) => { e.stopPropagation(); inspect(v); });
      return el('td', null, link);
    }
    return el('td', null, cellText(v));
  };
  table.replaceChildren(
    el('thead', null, el('tr', null, columns.map((c) => el('th', { title: c.type }, c.name)))),
    el('tbody', null, rows.map((row) => {
      const tr = el('tr', null, row.map(cell));
      if (onRow) tr.addEventListener('click', () => onRow(row, tr));
      return tr;
    })),
  );
}

// Whether a character takes two columns of a monospace font (wide East Asian, emoji).
function wide(c) {
  const n = c.codePointAt(0);
  return (n >= 0x1100 && n <= 0x115f) || (n >= 0x2e80 && n <= 0xa4cf) || (n >= 0xac00 && n <= 0xd7a3)
    || (n >= 0xf900 && n <= 0xfaff) || (n >= 0xfe30 && n <= 0xfe4f) || (n >= 0xff00 && n <= 0xff60)
    || (n >= 0xffe0 && n <= 0xffe6) || n >= 0x1f000;
}

// Shows an error in `box`: its message, and, when it names a spot in `sql`, that line
// with the spot marked and a caret under it (the line is not wrapped, so the caret stays
// under it; tabs are kept in the caret's line, so it lines up with them).
function showError(box, e, sql) {
  box.replaceChildren();
  if (!(e instanceof ApiError) || !sql || !e.error.line || !e.error.column) {
    box.textContent = describeError(e);
    box.hidden = false;
    return;
  }
  const err = e.error;
  box.append(el('div', null, err.sqlstate ? `${err.message} (SQLSTATE ${err.sqlstate})` : err.message));
  const chars = Array.from(sql.split('\n')[err.line - 1] || '');
  const at = Math.min(Math.max(0, err.column - 1), chars.length);
  let end = at;
  while (end < chars.length && /[\w"]/.test(chars[end])) end++;
  if (end === at && at < chars.length) end = at + 1;
  const caret = chars.slice(0, at).map((c) => (c === '\t' ? '\t' : wide(c) ? '  ' : ' ')).join('') + '^';
  box.append(el('pre', { class: 'spot' },
    chars.slice(0, at).join(''), el('mark', null, chars.slice(at, end).join('')), chars.slice(end).join(''),
    '\n', caret));
  box.hidden = false;
}

// An error as one line of text.
function describeError(e) {
  if (!(e instanceof ApiError)) return String(e);
  const err = e.error;
  return err.sqlstate ? `${err.message} (SQLSTATE ${err.sqlstate})` : err.message;
}

// "1 entity", "2 entities".
function count(n, one, many) {
  return `${n} ${n === 1 ? one : many}`;
}

let catalog = null;

function numericFields() {
  const out = [];
  for (const c of catalog.components) {
    for (const f of c.fields) {
      if (['INT', 'REAL', 'FLOAT'].includes(f.type)) out.push(`${c.name}.${f.name}`);
    }
  }
  return out;
}

function fieldType(qualified) {
  const [c, f] = qualified.split('.');
  const comp = catalog.components.find((x) => x.name === c);
  const field = comp && comp.fields.find((x) => x.name === f);
  return field ? field.type : null;
}

// ---- The entity browser ------------------------------------------------------------

const browse = { components: new Set(), filters: [], offset: 0, pageSize: 100, result: null };

function renderComponentChips() {
  const box = $('components');
  box.replaceChildren(...catalog.components.map((c) => {
    const chip = el('span', { class: 'chip', role: 'checkbox', 'data-component': c.name, tabindex: 0 },
      `${c.name} (${c.entities})`);
    if (browse.components.has(c.name)) chip.classList.add('on');
    chip.addEventListener('click', () => {
      if (browse.components.has(c.name)) browse.components.delete(c.name);
      else browse.components.add(c.name);
      chip.classList.toggle('on');
      browse.offset = 0;
      runBrowse();
    });
    return chip;
  }));
  const fields = [];
  for (const c of catalog.components) for (const f of c.fields) fields.push(`${c.name}.${f.name}`);
  $('filter-field').replaceChildren(...fields.map((f) => el('option', null, f)));
}

function renderFilters() {
  $('filters').replaceChildren(...browse.filters.map((f, i) => {
    const chip = el('span', { class: 'chip on', title: 'remove' }, `${f.field} ${f.op} ${f.value} ✕`);
    chip.addEventListener('click', () => { browse.filters.splice(i, 1); renderFilters(); browse.offset = 0; runBrowse(); });
    return chip;
  }));
}

function browseStatement() {
  const comps = new Set(browse.components);
  for (const f of browse.filters) comps.add(f.field.split('.')[0]);
  const names = [...comps];
  const columns = ['id'];
  for (const name of names) {
    const c = catalog.components.find((x) => x.name === name);
    for (const f of (c ? c.fields : []).slice(0, 4)) columns.push(`${ident(name)}.${ident(f.name)}`);
  }
  const where = [];
  const params = [];
  for (const f of browse.filters) {
    const [c, field] = f.field.split('.');
    const type = fieldType(f.field);
    let value = f.value;
    if (['INT', 'REAL', 'FLOAT', 'ENTITY'].includes(type) && f.op !== 'LIKE' && value.trim() !== '' && !isNaN(Number(value))) value = Number(value);
    else if (type === 'BOOL') value = /^(true|t|1|yes)$/i.test(value.trim());
    params.push(value);
    where.push(`${ident(c)}.${ident(field)} ${f.op} ?${params.length}`);
  }
  const search = $('search').value.trim();
  const joined = [];
  if (search !== '') {
    // Every TEXT field is searched: the components that hold one and are not picked are
    // joined as optional (LEFT JOIN: their fields are NULL where absent).
    const texts = [];
    for (const c of catalog.components) {
      const fields = c.fields.filter((f) => f.type === 'TEXT');
      if (!fields.length) continue;
      if (!names.includes(c.name)) joined.push(c.name);
      for (const f of fields) texts.push(`${ident(c.name)}.${ident(f.name)}`);
    }
    const alternatives = [];
    if (/^\d+$/.test(search)) { params.push(Number(search)); alternatives.push(`CAST(id AS INT) = ?${params.length}`); }
    if (texts.length) {
      params.push(`%${search}%`);
      for (const t of texts) alternatives.push(`${t} LIKE ?${params.length}`);
    }
    where.push(alternatives.length ? `(${alternatives.join(' OR ')})` : 'FALSE');
  }
  const from = (names.length ? names.map(ident).join(', ') : 'entities')
    + joined.map((c) => ` LEFT JOIN ${ident(c)}`).join('');
  let sql = `SELECT ${columns.join(', ')} FROM ${from}`;
  if (where.length) sql += ` WHERE ${where.join(' AND ')}`;
  sql += ' ORDER BY id';
  return { sql, params };
}

// Each list asked for has a number: an answer to an older one (a slower query, a search
// typed over) is dropped.
let browseAsked = 0;

async function runBrowse() {
  clearTimeout(browse.searchTimer);
  const asked = ++browseAsked;
  const { sql, params } = browseStatement();
  $('browse-sql').textContent = sql + (params.length ? `   -- ${JSON.stringify(params)}` : '');
  $('browse-error').hidden = true;
  try {
    const result = await query(sql, params, browse.pageSize);
    if (asked !== browseAsked) return;
    browse.result = result;
    browse.offset = 0;
    showBrowsePage(result);
  } catch (e) {
    if (asked !== browseAsked) return;
    showError($('browse-error'), e, sql);
    $('entity-table').replaceChildren();
    $('page-info').textContent = '';
  }
}

function resultId() {
  const next = browse.result && browse.result.next;
  const m = next && next.match(/\/api\/result\/(\d+)/);
  return m ? m[1] : browse.resultId;
}

function showBrowsePage(result) {
  browse.resultId = resultId() || browse.resultId;
  const table = $('entity-table');
  fillTable(table, result.columns, result.rows, (row, tr) => {
    for (const picked of table.querySelectorAll('tr.picked')) picked.classList.remove('picked');
    tr.classList.add('picked');
    inspect(row[0]);
  });
  const to = result.offset + result.rows.length;
  $('page-info').textContent = result.row_count
    ? `${result.offset + 1}–${to} of ${count(result.row_count, 'entity', 'entities')}`
    : 'no entities';
  $('prev').disabled = result.offset === 0;
  $('next').disabled = !result.next;
}

async function pageTo(offset) {
  if (!browse.resultId) return;
  const asked = ++browseAsked;
  try {
    const page = await get(`/api/result/${browse.resultId}?offset=${offset}&page_size=${browse.pageSize}`);
    if (asked !== browseAsked) return;
    browse.result = page;
    showBrowsePage(page);
  } catch (e) {
    // The kept result expired: run the statement again.
    if (asked === browseAsked) runBrowse();
  }
}

// ---- The inspector -----------------------------------------------------------------

// The entity asked for last: an answer about another (asked before it) is dropped.
let inspectAsked = 0;

async function inspect(id) {
  const asked = ++inspectAsked;
  $('inspected').textContent = `entity ${id}`;
  let entity;
  try {
    entity = await get(`/api/entity/${id}`);
  } catch (e) {
    if (asked !== inspectAsked) return;
    $('inspector-body').replaceChildren(el('div', { class: 'error' }, describeError(e)));
    return;
  }
  if (asked !== inspectAsked) return;
  const body = entity.components.map((c) => el('div', { class: 'component', 'data-component': c.name },
    el('h4', null, c.name, c.fields.length ? '' : ' (tag)'),
    c.fields.map((f) => el('div', { class: 'field' },
      el('label', { for: `f-${c.name}-${f.name}` }, f.name),
      el('span', { class: 'muted' }, f.type),
      fieldEditor(entity.id, c.name, f)))));
  $('inspector-body').replaceChildren(el('div', { class: 'muted' }, `as of tick ${entity.tick}`), ...body);
}

function fieldEditor(id, component, field) {
  const inputId = `f-${component}-${field.name}`;
  if (field.type === 'ENTITY') {
    const link = el('a', { class: 'entity', id: inputId }, field.value === null ? 'NULL' : `entity ${field.value}`);
    if (field.value !== null) link.addEventListener('click', () => inspect(field.value));
    return link;
  }
  const input = field.type === 'BOOL'
    ? el('input', { type: 'checkbox', id: inputId })
    : el('input', { id: inputId, value: field.value === null ? '' : String(field.value),
      inputmode: field.type === 'TEXT' ? undefined : 'decimal' });
  if (field.type === 'BOOL') input.checked = field.value === true;
  const commit = () => {
    let value;
    if (field.type === 'BOOL') value = input.checked;
    else if (field.type === 'TEXT') value = input.value;
    else if (input.value === '') value = null;
    else if (field.type === 'INT' && /^-?\d+$/.test(input.value.trim()) && !Number.isSafeInteger(Number(input.value))) {
      value = new BigInteger(input.value.trim());
    } else value = Number(input.value);
    if (typeof value === 'number' && Number.isNaN(value)) {
      logEdit(`${component}.${field.name}: ${input.value} is no number`, true);
      return;
    }
    edit(id, component, field.name, value);
  };
  input.addEventListener('change', commit);
  input.addEventListener('keydown', (e) => { if (e.key === 'Enter') input.blur(); });
  return input;
}

function logEdit(text, failed) {
  const item = el('li', { class: failed ? 'error' : '' }, text);
  $('edit-log').prepend(item);
}

function shown(value) {
  return value instanceof BigInteger ? value.digits : JSON.stringify(value);
}

async function edit(id, component, field, value) {
  const sql = `UPDATE ${ident(component)} SET ${ident(field)} = ?1 WHERE id = ?2`;
  try {
    const result = await query(sql, [value, id]);
    stats.edits += 1;
    logEdit(`${sql}   -- [${shown(value)}, ${id}]: ${result.affected} updated`);
  } catch (e) {
    logEdit(`${sql}   -- [${shown(value)}, ${id}]: ${describeError(e, sql)}`, true);
  }
  inspect(id);
}

// ---- The SQL console ----------------------------------------------------------------

async function runConsole(explain) {
  const text = $('sql').value;
  const sql = explain ? `EXPLAIN ${text}` : text;
  $('console-error').hidden = true;
  $('console-plan').hidden = true;
  $('console-info').textContent = 'running…';
  const started = performance.now();
  try {
    const result = await query(sql, [], 1000);
    const ms = (performance.now() - started).toFixed(1);
    if (explain) {
      $('console-plan').textContent = result.rows.map((r) => r.join('  ')).join('\n');
      $('console-plan').hidden = false;
      $('console-table').replaceChildren();
    } else {
      fillTable($('console-table'), result.columns, result.rows);
    }
    $('console-info').textContent = result.columns.length
      ? `${count(result.row_count, 'row', 'rows')}${result.next ? ', the first 1,000 shown' : ''} in ${ms} ms`
      : `${result.verb}: ${result.affected} written in ${ms} ms`;
  } catch (e) {
    // The position is in the text the user wrote: EXPLAIN's prefix taken off.
    if (explain && e instanceof ApiError && e.error.line === 1 && e.error.column) e.error.column -= 'EXPLAIN '.length;
    showError($('console-error'), e, text);
    $('console-info').textContent = '';
    $('console-table').replaceChildren();
  }
}

// ---- The live 2D view -----------------------------------------------------------------

const plot = { worker: null, data: null, dirty: false, bounds: null };
const PALETTE = ['#2f6fdf', '#e0662b', '#2e9d5b', '#b04ad1', '#c9a21c', '#d13b57'];

function setUpPlot() {
  const numeric = numericFields();
  const pick = (select, values, wanted) => {
    select.replaceChildren(...values.map((v) => el('option', null, v)));
    if (values.includes(wanted)) select.value = wanted;
  };
  pick($('plot-x'), numeric, 'Position.x');
  pick($('plot-y'), numeric, numeric.includes('Position.y') ? 'Position.y' : numeric[1]);
  const comps = ['(none)', ...catalog.components.map((c) => c.name)];
  const preferred = ['Health', 'Collider', 'Velocity'].find((c) => comps.includes(c)) || '(none)';
  pick($('plot-color'), comps, preferred);
  for (const id of ['plot-x', 'plot-y', 'plot-color', 'plot-all']) $(id).addEventListener('change', subscribePlot);
  subscribePlot();
  requestAnimationFrame(drawPlot);
}

// The most points the view follows unless asked for every one: past it, one entity in k
// is plotted (chosen by id), so that what the server keeps for the view, and sends each
// tick, is a k-th of the world's changes.
const PLOT_POINTS = 10000;

function subscribePlot() {
  const x = $('plot-x').value;
  const y = $('plot-y').value;
  if (!x || !y) { $('plot-info').textContent = 'no numeric fields to plot'; return; }
  const colour = $('plot-color').value;
  const [cx, fx] = x.split('.');
  const [cy, fy] = y.split('.');
  const from = cx === cy ? ident(cx) : `${ident(cx)}, ${ident(cy)}`;
  const has = colour === '(none)' ? 'FALSE' : `has(${ident(colour)})`;
  const counts = [cx, cy].map((c) => (catalog.components.find((k) => k.name === c) || { entities: 0 }).entities);
  const every = Math.max(1, Math.ceil(Math.min(...counts) / PLOT_POINTS));
  plot.sample = $('plot-all').checked ? 1 : every;
  const sample = plot.sample > 1 ? ` WHERE CAST(id AS INT) % ${plot.sample} = 0` : '';
  const sql = `SELECT id, ${ident(cx)}.${ident(fx)}, ${ident(cy)}.${ident(fy)}, ${has} FROM ${from}${sample}`;
  $('plot-error').hidden = true;
  if (plot.worker) plot.worker.terminate();
  plot.data = null;
  plot.bounds = null;
  plot.worker = new Worker('/explorer-worker.js');
  plot.worker.onmessage = (m) => {
    const msg = m.data;
    if (msg.kind === 'points') {
      plot.data = msg;
      plot.dirty = true;
      stats.plotPoints = msg.count;
      stats.plotBatches = msg.batches;
      stats.plotTick = msg.tick;
    } else if (msg.kind === 'error') {
      showError($('plot-error'), new ApiError(400, msg.error), sql);
    }
  };
  plot.worker.postMessage({ sql });
  $('plot-legend').replaceChildren(
    el('span', null, el('span', { class: 'swatch', 'data-colour': 0 }), colour === '(none)' ? 'entities' : `with ${colour}`),
    colour === '(none)' ? null : el('span', null, el('span', { class: 'swatch', 'data-colour': 1 }), `without ${colour}`),
  );
  for (const s of document.querySelectorAll('#plot-legend .swatch')) {
    s.style.background = s.dataset.colour === '0' ? PALETTE[0] : PALETTE[1];
  }
}

// Draws the points binned to the canvas's pixels (one write per pixel, whatever the
// number of points), scaled to the points' bounds.
function drawPlot() {
  requestAnimationFrame(drawPlot);
  if (!plot.dirty || !plot.data) return;
  plot.dirty = false;
  const started = performance.now();
  const canvas = $('plot');
  const ctx = canvas.getContext('2d');
  const { xs, ys, cs, count } = plot.data;
  const w = canvas.width;
  const h = canvas.height;
  let [minX, maxX, minY, maxY] = [Infinity, -Infinity, Infinity, -Infinity];
  for (let i = 0; i < count; i++) {
    const x = xs[i];
    const y = ys[i];
    if (x < minX) minX = x;
    if (x > maxX) maxX = x;
    if (y < minY) minY = y;
    if (y > maxY) maxY = y;
  }
  if (count === 0) { minX = minY = 0; maxX = maxY = 1; }
  // The scale only grows, or shrinks by much: points move on a steady frame.
  const b = plot.bounds;
  if (!b || minX < b[0] || maxX > b[1] || minY < b[2] || maxY > b[3]
      || (maxX - minX) < 0.5 * (b[1] - b[0]) || (maxY - minY) < 0.5 * (b[3] - b[2])) {
    const padX = (maxX - minX) * 0.05 || 1;
    const padY = (maxY - minY) * 0.05 || 1;
    plot.bounds = [minX - padX, maxX + padX, minY - padY, maxY + padY];
  }
  const [x0, x1, y0, y1] = plot.bounds;
  const image = ctx.createImageData(w, h);
  const px = image.data;
  const colours = [[0x2f, 0x6f, 0xdf], [0xe0, 0x66, 0x2b]];
  const sx = (w - 1) / (x1 - x0);
  const sy = (h - 1) / (y1 - y0);
  for (let i = 0; i < count; i++) {
    const x = Math.round((xs[i] - x0) * sx);
    const y = h - 1 - Math.round((ys[i] - y0) * sy);
    if (x < 0 || x >= w || y < 0 || y >= h) continue;
    const c = colours[cs[i]];
    for (const [dx, dy] of count < 5000 ? [[0, 0], [1, 0], [0, 1], [1, 1], [-1, 0], [0, -1]] : [[0, 0]]) {
      const xx = x + dx;
      const yy = y + dy;
      if (xx < 0 || xx >= w || yy < 0 || yy >= h) continue;
      const o = (yy * w + xx) * 4;
      px[o] = c[0]; px[o + 1] = c[1]; px[o + 2] = c[2]; px[o + 3] = 255;
    }
  }
  ctx.putImageData(image, 0, 0);
  // The bounds shown, at the edges: x at the foot, y at the left.
  const label = (v) => String(Math.round(v * 100) / 100);
  ctx.fillStyle = getComputedStyle(document.body).color;
  ctx.font = '11px system-ui, sans-serif';
  ctx.textBaseline = 'bottom';
  ctx.fillText(`${$('plot-x').value} ${label(x0)}`, 4, h - 2);
  const right = label(x1);
  ctx.fillText(right, w - 4 - ctx.measureText(right).width, h - 2);
  ctx.textBaseline = 'top';
  ctx.fillText(`${$('plot-y').value} ${label(y1)}`, 4, 2);
  ctx.textBaseline = 'bottom';
  ctx.fillText(label(y0), 4, h - 16);
  const ms = performance.now() - started;
  stats.plotFrames += 1;
  stats.plotFrameMs.push(ms);
  if (stats.plotFrameMs.length > 600) stats.plotFrameMs.shift();
  const sampled = plot.sample > 1 ? ` (1 entity in ${plot.sample})` : '';
  $('plot-info').textContent = `${count === 1 ? '1 point' : `${count} points`}${sampled} · tick ${plot.data.tick ?? '–'} · ${plot.data.batches} batches · drawn in ${ms.toFixed(1)} ms`;
}

// ---- Systems ------------------------------------------------------------------------

async function pollSystems() {
  try {
    const s = await get('/api/systems');
    drawSystems(s);
  } catch (e) {
    $('systems-legend').textContent = describeError(e);
  }
  setTimeout(pollSystems, 500);
}

function drawSystems(s) {
  const canvas = $('systems-plot');
  const ctx = canvas.getContext('2d');
  const w = canvas.width;
  const h = canvas.height;
  ctx.clearRect(0, 0, w, h);
  const names = s.systems.map((x) => x.name);
  let maxMs = 0;
  let [first, last] = [Infinity, -Infinity];
  for (const name of names) {
    for (const [tick, ms] of s.runs[name] || []) {
      maxMs = Math.max(maxMs, ms);
      first = Math.min(first, tick);
      last = Math.max(last, tick);
    }
  }
  const style = getComputedStyle(document.body);
  ctx.fillStyle = style.color;
  ctx.font = '11px system-ui, sans-serif';
  ctx.fillText(maxMs ? `${maxMs.toFixed(3)} ms` : 'no runs yet', 4, 12);
  if (Number.isFinite(first)) ctx.fillText(`ticks ${first}–${last}`, w - 110, h - 4);
  const span = Math.max(1, last - first);
  names.forEach((name, i) => {
    const runs = s.runs[name] || [];
    ctx.strokeStyle = PALETTE[i % PALETTE.length];
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    runs.forEach(([tick, ms], k) => {
      const x = ((tick - first) / span) * (w - 10) + 5;
      const y = h - 16 - (maxMs ? (ms / maxMs) * (h - 32) : 0);
      if (k === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
    });
    ctx.stroke();
  });
  $('systems-legend').replaceChildren(...names.map((name, i) => {
    const swatch = el('span', { class: 'swatch' });
    swatch.style.background = PALETTE[i % PALETTE.length];
    return el('span', { 'data-system': name }, swatch, `${name} (${(s.runs[name] || []).length} runs)`);
  }));
  const columns = ['name', 'phase', 'enabled', 'runs', 'last_ms', 'reads', 'writes'].map((n) => ({ name: n }));
  fillTable($('systems-table'), columns, s.systems.map((x) => columns.map((c) => x[c.name])));
}

// ---- Relations ------------------------------------------------------------------------

function setUpRelations() {
  const fields = [];
  for (const c of catalog.components) for (const f of c.fields) if (f.type === 'ENTITY') fields.push(`${c.name}.${f.name}`);
  if (!fields.length) {
    $('rel-info').textContent = 'no component has an ENTITY field';
    return;
  }
  $('rel-field').replaceChildren(...fields.map((f) => el('option', null, f)));
  $('rel-field').addEventListener('change', showRoots);
  showRoots();
}

function relation() {
  const [c, f] = $('rel-field').value.split('.');
  return { c: ident(c), f: ident(f) };
}

// The entities others point at and that point at none themselves: the trees' roots.
let rootsAsked = 0;

async function showRoots() {
  const asked = ++rootsAsked;
  const { c, f } = relation();
  const sql = `SELECT ${c}.${f} AS parent, count(*) AS children FROM ${c} WHERE ${c}.${f} IS NOT NULL `
    + `AND NOT EXISTS (SELECT 1 FROM ${c} AS up WHERE up.id = ${c}.${f}) GROUP BY ${c}.${f} ORDER BY ${c}.${f}`;
  $('rel-error').hidden = true;
  try {
    const result = await query(sql, [], 200);
    if (asked !== rootsAsked) return;
    $('rel-info').textContent = `${count(result.row_count, 'root', 'roots')}`;
    $('rel-tree').replaceChildren(...result.rows.map(([id, n]) => node(id, n)));
    if (result.next) $('rel-tree').append(more(result.next, $('rel-tree')));
  } catch (e) {
    if (asked !== rootsAsked) return;
    showError($('rel-error'), e, sql);
  }
}

// A link to the next 200 of a list of nodes, which takes its place when followed.
function more(next, into) {
  const link = el('a', { class: 'entity leaf' }, 'the next 200…');
  link.addEventListener('click', async () => {
    try {
      const page = await get(next);
      link.replaceWith(...page.rows.map(([id, n]) => node(id, n)), ...(page.next ? [more(page.next, into)] : []));
    } catch (e) {
      link.replaceWith(el('div', { class: 'error' }, describeError(e)));
    }
  });
  return link;
}

function node(id, children) {
  const label = el('a', { class: 'entity', 'data-entity': id }, `entity ${id}`);
  label.addEventListener('click', (e) => { e.preventDefault(); inspect(id); });
  if (!children) return el('div', { class: 'leaf' }, label);
  const details = el('details', { 'data-entity': id }, el('summary', null, label, ` (${children})`));
  details.addEventListener('toggle', async () => {
    if (!details.open || details.dataset.loaded) return;
    details.dataset.loaded = '1';
    const { c, f } = relation();
    const sql = `SELECT id, (SELECT count(*) FROM ${c} AS down WHERE down.${f} = ${c}.id) FROM ${c} WHERE ${c}.${f} = ?1 ORDER BY id`;
    try {
      const result = await query(sql, [id], 200);
      details.append(...result.rows.map(([child, n]) => node(child, n)));
      if (result.next) details.append(more(result.next, details));
    } catch (e) {
      details.append(el('div', { class: 'error' }, describeError(e, sql)));
    }
  });
  return details;
}

// ---- The clock, and start --------------------------------------------------------------

async function pollClock() {
  try {
    const c = await get('/api/clock');
    $('clock').textContent = `tick ${c.tick}` + (c.tick_rate ? ` · ${c.tick_rate} ticks/s` : ' · no clock (TICK moves it)')
      + (c.ticks_failed ? ` · ${c.ticks_failed} failed: ${c.last_error}` : '');
    $('status').textContent = '';
  } catch (e) {
    $('status').textContent = `cannot reach the server: ${describeError(e)}`;
  }
  setTimeout(pollClock, 500);
}

// The catalog again every 2 s: components made or dropped since, and the entity counts,
// show in the list's choices (what is picked stays picked).
async function pollCatalog() {
  try {
    const fresh = await get('/api/catalog');
    const shape = (c) => JSON.stringify(c.components);
    if (shape(fresh) !== shape(catalog)) {
      const picked = $('filter-field').value;
      catalog = fresh;
      for (const name of [...browse.components]) {
        if (!catalog.components.some((c) => c.name === name)) browse.components.delete(name);
      }
      renderComponentChips();
      if ([...$('filter-field').options].some((o) => o.value === picked)) $('filter-field').value = picked;
    }
  } catch (e) {
    // The clock's poll says when the server cannot be reached.
  }
  setTimeout(pollCatalog, 2000);
}

async function start() {
  try {
    catalog = await get('/api/catalog');
  } catch (e) {
    $('status').textContent = `cannot read the catalog: ${describeError(e)}`;
    return;
  }
  renderComponentChips();
  $('search').addEventListener('input', () => { clearTimeout(browse.searchTimer); browse.searchTimer = setTimeout(runBrowse, 250); });
  const addFilter = () => {
    browse.filters.push({ field: $('filter-field').value, op: $('filter-op').value, value: $('filter-value').value });
    renderFilters();
    runBrowse();
  };
  $('filter-add').addEventListener('click', addFilter);
  $('filter-value').addEventListener('keydown', (e) => { if (e.key === 'Enter') addFilter(); });
  $('prev').addEventListener('click', () => pageTo(Math.max(0, browse.result.offset - browse.pageSize)));
  $('next').addEventListener('click', () => pageTo(browse.result.offset + browse.pageSize));
  $('run').addEventListener('click', () => runConsole(false));
  $('explain').addEventListener('click', () => runConsole(true));
  $('sql').addEventListener('keydown', (e) => { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); runConsole(false); } });
  runBrowse();
  setUpPlot();
  pollSystems();
  setUpRelations();
  pollClock();
  setTimeout(pollCatalog, 2000);
  document.body.dataset.ready = '1';
}

start();
