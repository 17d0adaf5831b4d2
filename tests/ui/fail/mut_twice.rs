use ecsql::{Component, World};

#[derive(Component)]
struct Position {
    x: f32,
}

fn main() {
    let mut world = World::new();
    let _ = world.query::<(&mut Position, &mut Position)>();
}
