//! The stable 64-bit hash that names components and archetype tables.
//!
//! It must give the same number on every run, platform and Rust version (table names are
//! shown to users and will be written to dumps), so it is spelled out here rather than taken
//! from `std::hash`, whose algorithm may change. Nothing else should depend on it: in-memory
//! maps use hashbrown's own hasher.

/// FNV-1a over the bytes, then a SplitMix64 finalizer so that names differing in one byte
/// differ in about half of the bits (XOR-combining set hashes needs well-spread inputs).
pub(crate) fn stable_hash(bytes: &[u8]) -> u64 {
    const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = FNV_OFFSET;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    mix64(h)
}

/// SplitMix64's finalizer.
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_pinned() {
        // These numbers are part of the product: archetype names derive from them. They were
        // computed by a separate Python implementation of FNV-1a + SplitMix64. If this test
        // fails, table names changed for every user.
        assert_eq!(stable_hash(b""), 0xf52a_15e9_a9b5_e89b);
        assert_eq!(stable_hash(b"Position"), 0x93a0_58bd_4494_c2a4);
    }

    #[test]
    fn one_byte_changes_about_half_the_bits() {
        let a = stable_hash(b"Position");
        let b = stable_hash(b"Positioo");
        let differing = (a ^ b).count_ones();
        assert!((16..=48).contains(&differing), "{differing} bits differ");
    }
}
