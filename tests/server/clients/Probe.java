// pgjdbc (Debian's libpostgresql-jdbc-java) against `ecsql serve`: what a JDBC program
// and a JDBC tool (DBeaver, DataGrip, Metabase) do on connect and after. Prints one line
// per answer; tests/server/clients.rs compares them.
import java.sql.*;
import java.util.Properties;

public class Probe {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.setProperty("user", "test");
        try (Connection c = DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + args[0] + "/ecsql", p)) {
            DatabaseMetaData md = c.getMetaData();
            System.out.println("version " + md.getDatabaseProductVersion());
            try (ResultSet rs = md.getSchemas()) {
                while (rs.next()) System.out.println("schema " + rs.getString("TABLE_SCHEM"));
            }
            try (ResultSet rs = md.getTables(null, "public", "%", new String[] {"TABLE"})) {
                while (rs.next()) System.out.println("table " + rs.getString("TABLE_NAME"));
            }
            try (ResultSet rs = md.getColumns(null, "public", "Unit", "%")) {
                while (rs.next()) {
                    System.out.println("column " + rs.getString("COLUMN_NAME") + " " + rs.getString("TYPE_NAME")
                        + " " + rs.getInt("DATA_TYPE") + " " + rs.getString("IS_NULLABLE"));
                }
            }
            System.out.println("keywords " + md.getSQLKeywords().contains("spawn"));
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT Unit.name AS name, Unit.hp AS hp, Unit.speed AS speed FROM Unit WHERE Unit.hp > ? ORDER BY hp")) {
                ps.setLong(1, 1);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        System.out.println("row " + rs.getString("name") + " " + rs.getLong("hp") + " " + rs.getDouble("speed"));
                    }
                }
            }
            c.setAutoCommit(false);
            try (PreparedStatement ps = c.prepareStatement("UPDATE Unit SET hp = hp + ? WHERE Unit.name = ?")) {
                ps.setLong(1, 100);
                ps.setString(2, "u1");
                System.out.println("updated " + ps.executeUpdate());
            }
            c.rollback();
            c.setAutoCommit(true);
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT sum(Unit.hp) FROM Unit")) {
                rs.next();
                System.out.println("sum " + rs.getLong(1));
            }
            // A BigDecimal goes as a numeric, in binary once the statement is prepared
            // on the server (the fifth run).
            try (PreparedStatement ps = c.prepareStatement("SELECT ? * 2")) {
                double doubled = 0;
                for (int i = 0; i < 6; i++) {
                    ps.setBigDecimal(1, new java.math.BigDecimal("1.75"));
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        doubled = rs.getDouble(1);
                    }
                }
                System.out.println("decimal " + doubled);
            }
            try (Statement s = c.createStatement()) {
                s.executeQuery("SELECT nope FROM Unit");
            } catch (SQLException e) {
                System.out.println("error " + e.getSQLState());
            }
        }
    }
}
