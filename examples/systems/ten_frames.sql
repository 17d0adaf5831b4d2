-- Ten physics frames of examples/falling_cubes.sql.
.read examples/systems/physics.sql
.read examples/systems/physics.sql
.read examples/systems/physics.sql
.read examples/systems/physics.sql
.read examples/systems/physics.sql
.read examples/systems/physics.sql
.read examples/systems/physics.sql
.read examples/systems/physics.sql
.read examples/systems/physics.sql
.read examples/systems/physics.sql
