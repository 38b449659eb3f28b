//! Project chores: `cargo xtask codegen [--check]`, `cargo xtask bench`.

fn main() {}
