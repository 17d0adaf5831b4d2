// node-postgres (`pg`) against `ecsql serve`: connect, parameters, a transaction rolled
// back, an error's SQLSTATE. Prints one line per answer; tests/server/clients.rs compares
// them.
const { Client } = require('pg');

(async () => {
  const client = new Client({ host: '127.0.0.1', port: Number(process.argv[2]), user: 'test', database: 'ecsql' });
  await client.connect();
  const version = await client.query('SHOW server_version');
  console.log('version', version.rows[0].server_version);
  const rows = await client.query(
    'SELECT Unit.name AS name, Unit.hp AS hp FROM Unit WHERE Unit.hp > $1 ORDER BY hp', [1]);
  for (const r of rows.rows) console.log('row', r.name, r.hp);
  const typed = await client.query('SELECT $1::bigint * 2 AS a, $2::float8 / 2 AS b, $3::text AS c', [21, 1.5, 'hi']);
  console.log('types', typed.rows[0].a, typed.rows[0].b, typed.rows[0].c);
  await client.query('BEGIN');
  await client.query('UPDATE Unit SET hp = hp + $1 WHERE Unit.name = $2', [100, 'u1']);
  await client.query('ROLLBACK');
  const sum = await client.query('SELECT sum(Unit.hp) AS s FROM Unit');
  console.log('sum', sum.rows[0].s);
  // Untyped parameters into an INSERT's fields; a row keyed by the field's own name.
  await client.query('BEGIN');
  await client.query('INSERT INTO Unit (hp, name) VALUES ($1, $2)', [9, 'inserted']);
  const inserted = await client.query("SELECT Unit.hp, count(*) AS count FROM Unit WHERE Unit.name = $1 GROUP BY Unit.hp", ['inserted']);
  console.log('inserted', inserted.rows[0].hp, inserted.rows[0].count);
  await client.query('ROLLBACK');
  try {
    await client.query('SELECT nope FROM Unit');
  } catch (e) {
    console.log('error', e.code);
  }
  await client.end();
})().catch((e) => { console.error(e); process.exit(1); });
