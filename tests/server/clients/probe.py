# psycopg 3 against `ecsql serve`: connect, parameters of Python's types, a transaction
# rolled back, an error's SQLSTATE, the catalog, a second connection writing while the
# first (not in autocommit, psycopg's default) has only read. Prints one line per answer;
# tests/server/clients.rs compares them.
import sys
from decimal import Decimal

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
    print("declared", *conn.execute("SELECT %s + 1, %s", (1.5, True)).fetchone())
    # A Decimal is sent as numeric, and read back as float8, in text and in binary.
    print("numeric", *conn.execute("SELECT %s + 1", (Decimal("1.5"),)).fetchone())
    print("binary", *conn.cursor(binary=True).execute("SELECT %s + 1", (Decimal("1.5"),)).fetchone())
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
    with conn.cursor() as cur:
        with cur.copy("COPY (SELECT Unit.name AS name, Unit.hp AS hp FROM Unit WHERE Unit.hp < 3 ORDER BY hp) TO STDOUT") as copy:
            for row in copy.rows():
                print("copied", *row)
    conn.commit()

# psycopg's default: a BEGIN before the first statement. Reads only: the other
# connection writes without waiting (a busy_timeout of 1 s would fail it with 55P03).
with psycopg.connect(f"host=127.0.0.1 port={sys.argv[1]} user=test dbname=ecsql") as reader, psycopg.connect(
    f"host=127.0.0.1 port={sys.argv[1]} user=test dbname=ecsql", autocommit=True
) as writer:
    writer.execute("PRAGMA busy_timeout = 1000")
    print("before", reader.execute("SELECT count(*) FROM Unit").fetchone()[0], reader.info.transaction_status.name)
    writer.execute("SPAWN Unit(hp => 1, name => 'w')")
    print("after", reader.execute("SELECT count(*) FROM Unit").fetchone()[0])
    reader.commit()
    # COPY FROM STDIN in its transaction: commit() keeps the rows (the server says the
    # block is still open after the COPY).
    with reader.cursor() as cur:
        # psycopg writes a bool as PostgreSQL's text format does: t.
        with cur.copy("COPY Unit (hp, name, alive) FROM STDIN") as copy:
            copy.write_row((2, "copied in", True))
    print("copy", reader.info.transaction_status.name)
    reader.commit()
    print("kept", writer.execute("SELECT count(*) FROM Unit WHERE Unit.name = 'copied in' AND Unit.alive").fetchone()[0])
    # A query run often is prepared by psycopg, which forgets it at ROLLBACK (DEALLOCATE ALL).
    for i in range(6):
        reader.execute("SELECT count(*) FROM Unit WHERE Unit.hp < %s", (i,)).fetchone()
    reader.rollback()
    print("prepared", reader.execute("SELECT count(*) FROM Unit WHERE Unit.hp < %s", (100,)).fetchone()[0])
    reader.rollback()
