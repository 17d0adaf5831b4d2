//! Snapshots: a world written as bytes, and read back into an equal world. What a `SAVE`
//! writes and a `LOAD` reads (and, next, what a file database checkpoints).
//!
//! The format, little-endian throughout: the magic `ECSQLSNP`, a `u32` version, then
//! sections, each a kind byte, a `u64` payload length, the payload and a CRC-32 of the
//! kind, the length and the payload; a section of kind `END` closes the file. Sections:
//! the catalog (component ids in order, dropped ones marked, each with its name, storage
//! and fields with their defaults), the entity index without locations (generations,
//! the tail of far slots, the next slot, the free list in order), the archetype tables in
//! id order (component set, entity ids, one column after another), the sparse
//! components' tables, the event types with the rows they keep, the write tick, and (when
//! some reader asked for them) the change marks of the tracked components in every table
//! and the removal logs.
//! Columns are stored as they are in memory: fixed-size values back to back, text as a
//! length and its bytes, an entity as its 64 bits (0 for NULL).
//!
//! Invariants:
//! - Reading never panics and never builds half a world: every length is checked against
//!   the bytes left before anything is allocated for it, every section's checksum before
//!   its payload is read, and the world built is checked whole (`World::check_integrity`)
//!   before it is returned. An error names the byte offset where reading failed.
//! - What is read back is the world that was written: the same component and event ids,
//!   the same tables in the same order (so the same names), the same rows in the same
//!   order, the same ids with their generations and the same free list (so the same next
//!   ids), the same change marks and removal logs (so a reader whose cursors were kept
//!   sees the same changes). Not kept: observers (the caller rebuilds indexes from their
//!   definitions), an open transaction.
//!
//! `write.rs` writes a world as a snapshot, `read.rs` reads one back (and holds the byte
//! readers the layers above share); this file holds what both keep to: the magic, the
//! version, the section kinds, the type codes, and the errors of reading.

pub(super) mod read;
#[cfg(test)]
mod tests;
pub(super) mod write;

use super::value::FieldType;

/// The first bytes of every snapshot.
pub const MAGIC: &[u8; 8] = b"ECSQLSNP";

/// The format version this build writes, and the newest it reads.
pub const VERSION: u32 = 1;

const CATALOG: u8 = 1;
const ENTITIES: u8 = 2;
const TABLES: u8 = 3;
const SPARSE: u8 = 4;
const EVENTS: u8 = 5;
const CLOCK: u8 = 6;
const ABOVE: u8 = 7;
const MARKS: u8 = 8;
const END: u8 = 0xFF;

/// Why a snapshot could not be read. Each names where in the bytes it went wrong.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// The bytes do not start with the magic.
    #[error("not an ecsql snapshot: it does not start with {:?}", std::str::from_utf8(MAGIC).unwrap_or("ECSQLSNP"))]
    NotASnapshot,
    /// Written by a newer format than this build reads.
    #[error(
        "snapshot format version {found} is newer than this build reads (up to {VERSION}): read it with a newer ecsql"
    )]
    NewerVersion {
        /// The version the snapshot says.
        found: u32,
    },
    /// The bytes end before the snapshot does.
    #[error("the snapshot is cut short: it ends at byte {at}, inside {what}")]
    Truncated {
        /// Where the bytes end.
        at: u64,
        /// What was being read.
        what: &'static str,
    },
    /// A section's bytes do not match its checksum.
    #[error("the snapshot is damaged: its {section} section (bytes {start}..{end}) fails its checksum")]
    Checksum {
        /// Which section.
        section: &'static str,
        /// Its first byte.
        start: u64,
        /// One past its last byte.
        end: u64,
    },
    /// More bytes follow the snapshot's end.
    #[error(
        "the snapshot goes on past its end: {count} more bytes from byte {at} (two files joined, or a copy gone wrong?)"
    )]
    TrailingBytes {
        /// Where its end is.
        at: u64,
        /// How many bytes follow.
        count: u64,
    },
    /// The bytes are whole and their checksums match, but what they say is not a world.
    #[error("the snapshot is not a consistent world (at byte {at}): {message}")]
    Invalid {
        /// Where reading was.
        at: u64,
        /// What was wrong.
        message: String,
    },
}

type Result<T> = std::result::Result<T, SnapshotError>;

fn type_code(ty: FieldType) -> u8 {
    match ty {
        FieldType::Int => 1,
        FieldType::Float => 2,
        FieldType::Real => 3,
        FieldType::Bool => 4,
        FieldType::Text => 5,
        FieldType::Entity => 6,
    }
}
