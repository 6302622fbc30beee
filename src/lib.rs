pub mod protocol;

pub fn placeholder() {}
