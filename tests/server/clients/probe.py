# psycopg 3 against `ecsql serve`: connect, parameters of Python's types, a transaction
# rolled back, an error's SQLSTATE, the catalog. Prints one line per answer;
# tests/server/clients.rs compares them.
import sys

import psycopg

with psycopg.connect(f"host=127.0.0.1 port={sys.argv[1]} user=test dbname=ecsql") as conn:
    print("version", conn.info.parameter_status("server_version"))
    rows = conn.execute(
        "SELECT Unit.name AS name, Unit.hp AS hp, Unit.alive AS alive FROM Unit WHERE Unit.hp > %s ORDER BY hp",
        (1,),
    ).fetchall()
    for name, hp, alive in rows:
        print("row", name, hp, alive)
    value = conn.execute("SELECT %s::bigint * 2, %s::float8 / 2, %s::text || '!', %s::bool", (21, 1.5, "hi", False)).fetchone()
    print("types", *value)
    conn.commit()
    conn.execute("UPDATE Unit SET hp = hp + %s WHERE Unit.name = %s", (100, "u1"))
    conn.rollback()
    print("sum", conn.execute("SELECT sum(Unit.hp) FROM Unit").fetchone()[0])
    conn.commit()
    with conn.transaction():
        conn.execute("SPAWN Unit(hp => %s, name => %s)", (7, "new"))
    print("count", conn.execute("SELECT count(*) FROM Unit").fetchone()[0])
    try:
        conn.execute("SELECT nope FROM Unit")
    except psycopg.Error as e:
        print("error", e.sqlstate)
        conn.rollback()
    for column, kind in conn.execute(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = %s ORDER BY ordinal_position",
        ("Unit",),
    ):
        print("column", column, kind)
