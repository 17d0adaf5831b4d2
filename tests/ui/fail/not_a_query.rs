use ecsql::World;

struct Plain;

fn main() {
    let mut world = World::new();
    let _ = world.query::<&Plain>();
}
