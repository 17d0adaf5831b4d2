use ecsql::{Component, World};

#[derive(Component)]
struct Position {
    x: f32,
}

#[derive(Component)]
struct Velocity {
    x: f32,
}

fn main() {
    let mut world = World::new();
    world.register::<Position>().unwrap();
    world.register::<Velocity>().unwrap();
    for (mut p, v) in world.query::<(&mut Position, &Velocity)>().unwrap().iter() {
        p.x += v.x;
    }
}
