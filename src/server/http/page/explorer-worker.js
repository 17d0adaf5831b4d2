// The live view's subscription, off the page's thread: reads the batches of
// SELECT id, x, y, colour FROM … as Server-Sent Events, keeps each entity's point, and
// posts the points (typed arrays) at most 30 times a second.
'use strict';

const points = new Map(); // id -> [x, y, colour]
let source = null;
let dirty = false;
let batches = 0;
let tick = null;

// A batch is a bag of rows: an entity's row that changed leaves (diff < 0) and comes
// again (diff > 0), at most once each, since a batch sums each row's diffs. Leavings
// first, by id; then comings. A point whose x or y is no finite number is not drawn.
function apply(rows) {
  for (const r of rows) if (r[5] < 0) points.delete(String(r[0]));
  for (const r of rows) {
    if (r[5] > 0) {
      const x = Number(r[1]);
      const y = Number(r[2]);
      if (r[1] !== null && r[2] !== null && Number.isFinite(x) && Number.isFinite(y)) {
        points.set(String(r[0]), [x, y, r[3] ? 0 : 1]);
      }
    }
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
  const url = `/api/subscribe?sql=${encodeURIComponent(m.data.sql)}`;
  source = new EventSource(url);
  // Each stream (a new one after a reconnect too) starts with its columns, then the
  // whole result: what was kept before is dropped.
  source.addEventListener('columns', () => {
    points.clear();
    dirty = true;
  });
  source.addEventListener('batch', (e) => {
    apply(JSON.parse(e.data).rows);
    batches += 1;
    dirty = true;
  });
  source.addEventListener('error', async (e) => {
    if (e.data) {
      postMessage({ kind: 'error', error: JSON.parse(e.data).error });
      source.close();
    } else if (source.readyState === EventSource.CLOSED) {
      // Refused before any event (a query that cannot run, too many streams): the
      // answer's error, asked for once more.
      try {
        const answer = await fetch(url);
        const body = await answer.json();
        postMessage({ kind: 'error', error: body.error || { message: `HTTP ${answer.status}` } });
      } catch (err) {
        postMessage({ kind: 'error', error: { message: `the live query's stream failed: ${err}` } });
      }
    }
  });
};

setInterval(post, 33);
