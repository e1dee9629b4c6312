//! A counting global allocator for the xtask binary, so `cargo xtask bench nb` can measure
//! exactly how much heap the client's replica holds: [`live_bytes`] is the number of bytes
//! requested and not yet freed by the whole process (allocator bookkeeping and page slack
//! not included).

use std::alloc::System;

use cap::Cap;

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

/// Heap bytes currently allocated by this process.
pub fn live_bytes() -> usize {
    ALLOCATOR.allocated()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_live_allocations() {
        let before = live_bytes();
        let block = vec![7u8; 64 << 20];
        let during = live_bytes();
        assert!(during >= before + (48 << 20), "{before} -> {during}");
        drop(block);
        assert!(live_bytes() < during);
    }
}
