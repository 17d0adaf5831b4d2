// The live view's subscription, off the page's thread: reads the batches of
// SELECT id, x, y, colour FROM … as Server-Sent Events, keeps each entity's point, and
// posts the points (typed arrays) at most 30 times a second.
'use strict';

const points = new Map(); // id -> [x, y, colour]
let source = null;
let dirty = false;
let batches = 0;
let tick = null;

function apply(rows) {
  // A row that changed leaves (-1) and comes again (+1): leavings first.
  for (const r of rows) {
    if (r[5] < 0) {
      const p = points.get(r[0]);
      if (p && p[0] === r[1] && p[1] === r[2]) points.delete(r[0]);
    }
  }
  for (const r of rows) {
    if (r[5] > 0) points.set(r[0], [Number(r[1]), Number(r[2]), r[3] ? 0 : 1]);
    if (tick === null || r[4] > tick) tick = r[4];
  }
}

function post() {
  if (!dirty) return;
  dirty = false;
  const count = points.size;
  const xs = new Float64Array(count);
  const ys = new Float64Array(count);
  const cs = new Uint8Array(count);
  let i = 0;
  for (const p of points.values()) {
    xs[i] = p[0]; ys[i] = p[1]; cs[i] = p[2]; i++;
  }
  postMessage({ kind: 'points', xs, ys, cs, count, batches, tick }, [xs.buffer, ys.buffer, cs.buffer]);
}

onmessage = (m) => {
  if (source) source.close();
  source = new EventSource(`/api/subscribe?sql=${encodeURIComponent(m.data.sql)}`);
  source.addEventListener('batch', (e) => {
    apply(JSON.parse(e.data).rows);
    batches += 1;
    dirty = true;
  });
  source.addEventListener('error', (e) => {
    if (e.data) {
      postMessage({ kind: 'error', error: JSON.parse(e.data).error });
      source.close();
    }
  });
};

setInterval(post, 33);
