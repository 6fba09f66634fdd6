mod bench;
fn main() {}
