use ecsql::Component;

#[derive(Component)]
struct Sprite {
    frame: u8,
}

fn main() {}
