//! UUIDs the controller chooses for the shared rows it creates (the COPP, the load balancer
//! groups), so that every network can be planned, and its transaction sent, before those
//! rows are committed: the rows are inserted with these UUIDs (`insert` with `uuid`) on the
//! same connection, ahead of the transactions that refer to them.
//!
//! Derived from the table and the name (FNV-1a, 128 bits, with the RFC 4122 version 4
//! and variant bits), so a second controller creating the same row picks the same UUID
//! and one of the two inserts is refused rather than both rows made.

use udn_ovsdb::protocol::Uuid;

const FNV_OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
const FNV_PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;

/// The UUID of the shared row `name` of `table`.
pub fn shared_row_uuid(table: &str, name: &str) -> Uuid {
    let mut hash = FNV_OFFSET;
    for byte in b"udn-shared-row\0"
        .iter()
        .chain(table.as_bytes())
        .chain(b"\0")
        .chain(name.as_bytes())
    {
        hash ^= u128::from(*byte);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    // Version 4 (bits 76-79 = 0100) and variant 10 (bits 62-63).
    let hash = (hash & !(0xf << 76)) | (0x4 << 76);
    let hash = (hash & !(0x3 << 62)) | (0x2 << 62);
    Uuid::from_u128(hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_uuid_per_row_a_valid_version_4() {
        let a = shared_row_uuid("Copp", "ovnkube-default");
        assert_eq!(a, shared_row_uuid("Copp", "ovnkube-default"));
        assert_ne!(a, shared_row_uuid("Load_Balancer_Group", "ovnkube-default"));
        assert_ne!(
            shared_row_uuid("Load_Balancer_Group", "clusterLBGroup"),
            shared_row_uuid("Load_Balancer_Group", "clusterRouterLBGroup")
        );
        let text = a.to_string();
        assert_eq!(text.len(), 36);
        assert_eq!(&text[14..15], "4", "{text}");
        assert!(matches!(&text[19..20], "8" | "9" | "a" | "b"), "{text}");
    }
}
