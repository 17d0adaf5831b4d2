//! The journal of a file database: every change committed since the last checkpoint, in
//! commit order, as the statements that made it, with what makes running them again give
//! the same world (their parameters, their `random()` seed, where a prepared statement's
//! cursors stood, the Rust systems a tick ran).
//!
//! The format, little-endian: a header of 24 bytes (the magic `ECSQLJNL`, a `u32` version,
//! the `u64` number of the checkpoint it follows, a CRC-32 of those 20 bytes), then
//! records. A record is a 12-byte frame (the payload's length as a `u32`; a CRC-32 of the
//! previous record's checksum, or the header's, followed by the payload; a CRC-32 of those
//! 8 bytes), the payload (a kind byte and its body) and a 4-byte trailer repeating the
//! record's checksum, written last.
//!
//! Invariants:
//! - The writer only ever appends whole records, each with one write at the end of what is
//!   valid. A write that fails is cut back off before anything else is written; a journal
//!   that cannot be cut back (or flushed, or started over) refuses every later write
//!   (`Writer::is_broken`) until it is started over by a checkpoint.
//! - Reading gives the longest run of whole records whose checksums match, from the header
//!   on. What follows it is a torn tail (a write the process or the machine did not finish:
//!   its trailer is not there) when no whole frame comes after the first bad one; a bad
//!   record written to its end (its trailer there, repeating the checksum of the payload
//!   before it, whether its frame is sound or not), or one with records after it, is
//!   damage, and reading refuses it with the bad record's offset. Nothing is skipped.
//! - Each record's checksum chains the one before, so records cannot be reordered, and a
//!   record left from an older journal is not read as part of this one.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};

use crate::exec::EventCursors;
use crate::plan::{ParamValues, Tracking};
use crate::storage::{BytesIn, BytesOut, ComponentId, EventId, ReadBytes, SnapshotError};

/// The first bytes of every journal.
pub(crate) const MAGIC: &[u8; 8] = b"ECSQLJNL";
/// The format version this build writes, and the newest it reads.
pub(crate) const VERSION: u32 = 1;
/// The header's length.
pub(crate) const HEADER: u64 = 24;
/// A frame's length.
const FRAME: usize = 12;
/// A record's trailer: its checksum again, written last, so that a record written to its
/// end can be told from one a crash cut short.
const TRAILER: usize = 4;
/// How far ahead of its records a journal's zeros are written.
const ALLOCATE: u64 = 64 << 10;

const COMMIT: u8 = 1;
const AHEAD: u8 = 2;
const STATEMENT: u8 = 1;
const TRACK_CHANGES: u8 = 2;
const TRACK_REMOVALS: u8 = 3;
const RUST_SYSTEM: u8 = 4;

/// One statement as it committed.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Entry {
    /// Its text (a statement printed back parses to itself).
    pub text: String,
    pub params: ParamValues,
    /// The seed its `random()` ran with.
    pub seed: u64,
    /// The world's write tick when it began (the writes before it that were undone, or
    /// failed, moved it on without a record).
    pub tick: u64,
    /// Where a prepared statement's cursors stood (what it had seen of events and
    /// changes), when it was one.
    pub reader: Option<EventCursors>,
    /// For a tick: the Rust systems the schedule held (their closures are the program's).
    pub rust_systems: Vec<String>,
}

/// One step of a commit.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Step {
    /// A statement that ran.
    Statement(Entry),
    /// A reader turned tracking on (which no rollback takes back), at write tick `tick`.
    Track(Tracking, u64),
    /// The program registered a Rust system: where it stands in the schedule (its
    /// closure is the program's to register again), at write tick `tick`.
    RustSystem {
        name: String,
        clauses: String,
        tick: u64,
    },
}

/// One record: what one commit kept (a statement, a transaction's statements, or the
/// tracking a rolled-back transaction turned on), in the order it happened.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Record {
    pub steps: Vec<Step>,
    /// Written ahead of its one step, before it ran (and cut back off if it failed); else
    /// written after every step ran.
    pub ahead: bool,
}

impl Record {
    /// A record of `steps` that ran.
    pub(crate) fn kept(steps: Vec<Step>) -> Record {
        Record { steps, ahead: false }
    }

    /// A record of `step`, written before it runs.
    pub(crate) fn ahead(step: Step) -> Record {
        Record {
            steps: vec![step],
            ahead: true,
        }
    }

    /// The payload bytes, after what `bytes` holds.
    pub(crate) fn encode_after(&self, bytes: Vec<u8>) -> Vec<u8> {
        let mut out = BytesOut::after(bytes);
        out.u8(if self.ahead { AHEAD } else { COMMIT });
        out.len(self.steps.len());
        for step in &self.steps {
            match step {
                Step::Statement(e) => {
                    out.u8(STATEMENT);
                    encode_entry(&mut out, e);
                }
                Step::RustSystem { name, clauses, tick } => {
                    out.u8(RUST_SYSTEM);
                    out.str(name);
                    out.str(clauses);
                    out.u64(*tick);
                }
                Step::Track(tracking, tick) => {
                    let (kind, c) = match tracking {
                        Tracking::Changes(c) => (TRACK_CHANGES, c),
                        Tracking::Removals(c) => (TRACK_REMOVALS, c),
                    };
                    out.u8(kind);
                    out.u32(c.to_raw());
                    out.u64(*tick);
                }
            }
        }
        out.into_bytes()
    }

    /// A payload read back; the error says what was wrong, and where in the payload.
    pub(crate) fn decode(payload: &[u8]) -> Result<Record, (usize, String)> {
        let mut record = Record::kept(Vec::new());
        record.decode_over(payload)?;
        Ok(record)
    }

    /// `decode` written over this record, in the memory its steps have (a replay reads a
    /// million records of one statement each with no allocation for their steps and
    /// numeric positional parameters; a TEXT value, a parameter's name or a reader's
    /// cursors still allocate).
    pub(crate) fn decode_over(&mut self, payload: &[u8]) -> Result<(), (usize, String)> {
        let mut input = BytesIn::new(payload);
        decode_record(&mut input, self).map_err(|e| (input.position(), e))?;
        if !input.is_done() {
            return Err((input.position(), "bytes are left over after the record".into()));
        }
        Ok(())
    }
}

fn encode_entry(out: &mut BytesOut, e: &Entry) {
    out.str(&e.text);
    out.u64(e.seed);
    out.u64(e.tick);
    out.len(e.params.positional.len());
    for v in &e.params.positional {
        out.value(v);
    }
    out.len(e.params.named.len());
    for (name, v) in &e.params.named {
        out.str(name);
        out.value(v);
    }
    match &e.reader {
        None => out.u8(0),
        Some(cursors) => {
            out.u8(1);
            let seen: Vec<_> = cursors.iter().collect();
            out.len(seen.len());
            for (event, seq) in seen {
                out.u32(event.to_raw());
                out.u64(seq);
            }
            match cursors.changes_since() {
                None => out.u8(0),
                Some(tick) => {
                    out.u8(1);
                    out.u64(tick);
                }
            }
        }
    }
    out.len(e.rust_systems.len());
    for name in &e.rust_systems {
        out.str(name);
    }
}

/// A reader's error as a record's: what was wrong (`decode` adds where).
fn cut(e: SnapshotError) -> String {
    match e {
        SnapshotError::Truncated { what, .. } => format!("the record ends inside {what}"),
        SnapshotError::Invalid { message, .. } => message,
        other => other.to_string(),
    }
}

/// Reads a record over `record`: a statement step is read over the statement of the
/// step at its place, when there was one.
fn decode_record(input: &mut BytesIn<'_>, record: &mut Record) -> Result<(), String> {
    record.ahead = match input.u8("the record's kind").map_err(cut)? {
        COMMIT => false,
        AHEAD => true,
        other => return Err(format!("unknown record kind {other}")),
    };
    let n = input.count(1, "the steps").map_err(cut)?;
    record.steps.truncate(n);
    for k in 0..n {
        let step = match input.u8("a step's kind").map_err(cut)? {
            STATEMENT => match record.steps.get_mut(k) {
                Some(Step::Statement(entry)) => {
                    decode_entry(input, entry)?;
                    continue;
                }
                _ => {
                    let mut entry = Entry::default();
                    decode_entry(input, &mut entry)?;
                    Step::Statement(entry)
                }
            },
            RUST_SYSTEM => Step::RustSystem {
                name: input.str("a Rust system's name").map_err(cut)?,
                clauses: input.str("a Rust system's clauses").map_err(cut)?,
                tick: input.u64("a write tick").map_err(cut)?,
            },
            kind @ (TRACK_CHANGES | TRACK_REMOVALS) => {
                let c = ComponentId::from_raw(input.u32("a component id").map_err(cut)?);
                let tracking = if kind == TRACK_CHANGES {
                    Tracking::Changes(c)
                } else {
                    Tracking::Removals(c)
                };
                Step::Track(tracking, input.u64("a write tick").map_err(cut)?)
            }
            other => return Err(format!("unknown step kind {other}")),
        };
        match record.steps.get_mut(k) {
            Some(at) => *at = step,
            None => record.steps.push(step),
        }
    }
    Ok(())
}

/// Reads a statement step over `entry`, in the memory its text and vectors have.
fn decode_entry(input: &mut BytesIn<'_>, entry: &mut Entry) -> Result<(), String> {
    input.str_into("a statement", &mut entry.text).map_err(cut)?;
    entry.seed = input.u64("a seed").map_err(cut)?;
    entry.tick = input.u64("a write tick").map_err(cut)?;
    let params = &mut entry.params;
    params.clear();
    for _ in 0..input.count(1, "the parameters").map_err(cut)? {
        params.positional.push(input.value().map_err(cut)?);
    }
    for _ in 0..input.count(1, "the named parameters").map_err(cut)? {
        let name = input.str("a parameter's name").map_err(cut)?;
        params.named.push((name, input.value().map_err(cut)?));
    }
    entry.reader = match input.u8("a reader's presence").map_err(cut)? {
        0 => None,
        _ => {
            let mut seen = Vec::new();
            for _ in 0..input.count(1, "a reader's cursors").map_err(cut)? {
                let event = EventId::from_raw(input.u32("a cursor").map_err(cut)?);
                seen.push((event, input.u64("a cursor").map_err(cut)?));
            }
            let mut cursors = EventCursors::from_seen(seen);
            if input.u8("a reader's changes").map_err(cut)? != 0 {
                cursors.saw_changes_until(input.u64("a reader's changes").map_err(cut)?);
            }
            Some(cursors)
        }
    };
    entry.rust_systems.clear();
    for _ in 0..input.count(1, "the Rust systems").map_err(cut)? {
        entry
            .rust_systems
            .push(input.str("a Rust system's name").map_err(cut)?);
    }
    Ok(())
}

/// The header of a journal following checkpoint `base`.
fn header(base: u64) -> [u8; HEADER as usize] {
    let mut h = [0u8; HEADER as usize];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12..20].copy_from_slice(&base.to_le_bytes());
    let crc = crc32fast::hash(&h[..20]);
    h[20..].copy_from_slice(&crc.to_le_bytes());
    h
}

/// The checksum of a record whose predecessor's checksum is `previous`.
fn chained(previous: u32, payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&previous.to_le_bytes());
    h.update(payload);
    h.finalize()
}

fn frame_at(bytes: &[u8], at: usize) -> Option<(usize, u32)> {
    let f = bytes.get(at..at.checked_add(FRAME)?)?;
    let word = |i: usize| u32::from_le_bytes([f[i], f[i + 1], f[i + 2], f[i + 3]]);
    (crc32fast::hash(&f[..8]) == word(8)).then(|| (word(0) as usize, word(4)))
}

/// Where the record at `at`, whose frame fails its checksum, ends (its trailer's end),
/// when what follows the frame shows it was written whole: the payload the frame's length
/// gives matches the trailer after it, or a trailer repeating the frame's checksum ends a
/// payload that matches it. A torn write leaves neither: past what it wrote, the journal
/// holds zeros or ends.
fn written_whole(bytes: &[u8], at: usize, last: u32) -> Option<usize> {
    let frame = bytes.get(at..at + FRAME)?;
    let word = |i: usize| u32::from_le_bytes([frame[i], frame[i + 1], frame[i + 2], frame[i + 3]]);
    let start = at + FRAME;
    let trailer_of = |end: usize| {
        let t = bytes.get(end..end.checked_add(TRAILER)?)?;
        Some(u32::from_le_bytes([t[0], t[1], t[2], t[3]]))
    };
    // The length is sound: its payload's checksum is the trailer after it (and the payload
    // is a record: zeros a torn write left could not be one).
    let end = start.checked_add(word(0) as usize)?;
    if let (Some(payload), Some(trailer)) = (bytes.get(start..end), trailer_of(end))
        && chained(last, payload) == trailer
        && Record::decode(payload).is_ok()
    {
        return Some(end + TRAILER);
    }
    // The checksum is sound: a trailer repeating it ends a payload that matches it.
    let crc = word(4).to_le_bytes();
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&last.to_le_bytes());
    let mut hashed = start;
    (start..bytes.len().saturating_sub(TRAILER - 1))
        .filter(|&end| bytes[end..end + TRAILER] == crc)
        .find(|&end| {
            hasher.update(&bytes[hashed..end]);
            hashed = end;
            hasher.clone().finalize() == word(4) && Record::decode(&bytes[start..end]).is_ok()
        })
        .map(|end| end + TRAILER)
}

/// What reading a journal found.
#[derive(Debug)]
pub(crate) enum Read {
    /// Not a journal of the snapshot beside it: written before its checkpoint (a crash
    /// after the snapshot was renamed into place but before the journal was emptied), so
    /// everything in it is in the snapshot already. Also an empty or torn header.
    Stale,
    /// The records, each as its offset, where its payload lies (checked against its
    /// checksum; `Record::decode` reads it, one at a time) and the checksum before it
    /// (to cut it off); the length of the valid prefix (a torn tail may follow it) and the
    /// last checksum there.
    Records {
        records: Vec<(u64, std::ops::Range<usize>, u32)>,
        valid: u64,
        last: u32,
    },
}

/// Why a journal was refused: the offset and what was wrong there.
#[derive(Debug, PartialEq)]
pub(crate) struct Damage {
    pub offset: u64,
    pub message: String,
    /// False when nothing is damaged, only out of step (a snapshot older than its journal).
    pub damaged: bool,
}

/// Reads a journal that should follow checkpoint `base`.
pub(crate) fn read(bytes: &[u8], base: u64) -> Result<Read, Damage> {
    let damage = |offset: usize, message: String| Damage {
        offset: offset as u64,
        message,
        damaged: true,
    };
    if bytes.len() < HEADER as usize {
        // Written whole (24 bytes in one write) or not at all, unless torn: an empty
        // journal either way.
        if bytes.len() >= 8 && &bytes[..8] != MAGIC {
            return Err(damage(
                0,
                "it is not an ecsql journal (its first bytes are not ECSQLJNL)".into(),
            ));
        }
        return Ok(Read::Stale);
    }
    if &bytes[..8] != MAGIC {
        return Err(damage(
            0,
            "it is not an ecsql journal (its first bytes are not ECSQLJNL)".into(),
        ));
    }
    let version = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    let crc = u32::from_le_bytes([bytes[20], bytes[21], bytes[22], bytes[23]]);
    if crc32fast::hash(&bytes[..20]) != crc {
        return Err(damage(0, "its header fails its checksum".into()));
    }
    if version > VERSION {
        return Err(damage(
            8,
            format!(
                "journal format version {version} is newer than this build reads (up to {VERSION}): open it with a newer ecsql"
            ),
        ));
    }
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[12..20]);
    let follows = u64::from_le_bytes(b);
    if follows > base {
        return Err(Damage {
            damaged: false,
            ..damage(
                12,
                format!(
                    "it follows checkpoint {follows}, but the snapshot beside it is checkpoint {base}: the snapshot is older than its journal (put back the snapshot the journal belongs to, or move the journal away to open the snapshot alone)"
                ),
            )
        });
    }
    if follows < base {
        return Ok(Read::Stale);
    }
    let mut records = Vec::new();
    let mut at = HEADER as usize;
    let mut last = crc;
    while at < bytes.len() {
        let whole = frame_at(bytes, at).and_then(|(len, crc)| {
            let start = at + FRAME;
            let payload = bytes.get(start..start.checked_add(len)?)?;
            Some((len, crc, payload))
        });
        let bad = match whole {
            Some((len, crc, payload)) if chained(last, payload) == crc => {
                records.push((at as u64, at + FRAME..at + FRAME + len, last));
                at += FRAME + len + TRAILER;
                last = crc;
                continue;
            }
            Some((len, crc, _)) => {
                // Written to its end (its trailer repeats its checksum), yet failing it:
                // damaged after it was written, never a write a crash cut short.
                let end = at + FRAME + len;
                if bytes.get(end..end + TRAILER) == Some(&crc.to_le_bytes()[..]) {
                    return Err(damage(
                        at,
                        format!(
                            "the record there (bytes {at}..{}) was written whole but fails its checksum; to open the database at the commit before it, cut the journal there (truncate -s {at})",
                            end + TRAILER
                        ),
                    ));
                }
                "it fails its checksum"
            }
            None if frame_at(bytes, at).is_some() => "it runs past the end of the file",
            None => {
                // A frame that fails its own checksum is torn unless the record behind it
                // proves it was written to its end: a payload that matches the frame's
                // checksum (or the length it gives) and the trailer after it. Such a
                // record was whole, and may have been acknowledged.
                if let Some(end) = written_whole(bytes, at, last) {
                    return Err(damage(
                        at,
                        format!(
                            "the record there (bytes {at}..{end}) was written whole but its frame fails its checksum; to open the database at the commit before it, cut the journal there (truncate -s {at})"
                        ),
                    ));
                }
                "its frame fails its checksum"
            }
        };
        // A whole frame after it: damage in the middle, not an unfinished last write.
        let from = match frame_at(bytes, at) {
            Some((len, _)) => at.saturating_add(FRAME + TRAILER).saturating_add(len),
            None => at + 1,
        };
        if let Some(next) =
            (from..bytes.len().saturating_sub(FRAME - 1)).find(|&p| frame_at(bytes, p).is_some())
        {
            return Err(damage(
                at,
                format!("the record there is damaged ({bad}) and records follow it (from byte {next})"),
            ));
        }
        return Ok(Read::Records {
            records,
            valid: at as u64,
            last,
        });
    }
    Ok(Read::Records {
        records,
        valid: at as u64,
        last,
    })
}

/// Writes all of `bytes` at `offset` of `file`: one system call where the system has
/// one for it (a seek and a write elsewhere).
fn write_at(file: &File, bytes: &[u8], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::write_all_at(file, bytes, offset)
    }
    #[cfg(not(unix))]
    {
        let mut file = file;
        file.seek(SeekFrom::Start(offset))?;
        file.write_all(bytes)
    }
}

/// Appends records to a journal file.
#[derive(Debug)]
pub(crate) struct Writer {
    file: File,
    /// The end of the valid records: where the next one goes.
    len: u64,
    /// The file's length: past `len`, zeros written ahead, so that a flush after an
    /// append need not record a new length or new blocks (a zeroed tail reads as torn).
    allocated: u64,
    /// The last record's checksum (the header's before any).
    last: u32,
    /// Why the journal takes no more records: a failed write could not be cut back off.
    broken: Option<String>,
    /// The last record's bytes, kept for the next one's.
    scratch: Vec<u8>,
}

/// Where a journal stood, to cut a record back off (`Writer::cut_to`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mark {
    len: u64,
    last: u32,
}

impl Mark {
    /// The length of the journal at this mark.
    pub(crate) fn len(self) -> u64 {
        self.len
    }
}

impl Writer {
    /// A journal file emptied and started over after checkpoint `base` (not yet synced).
    pub(crate) fn start(mut file: File, base: u64) -> io::Result<Writer> {
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
        let h = header(base);
        file.write_all(&h)?;
        Ok(Writer {
            file,
            len: HEADER,
            allocated: HEADER,
            last: u32::from_le_bytes([h[20], h[21], h[22], h[23]]),
            broken: None,
            scratch: Vec::new(),
        })
    }

    /// A journal read back: its valid records end at `valid`, the last with checksum
    /// `last`; a torn tail past them is cut off.
    pub(crate) fn resume(file: File, valid: u64, last: u32) -> io::Result<Writer> {
        if file.metadata()?.len() != valid {
            file.set_len(valid)?;
        }
        Ok(Writer {
            file,
            len: valid,
            allocated: valid,
            last,
            broken: None,
            scratch: Vec::new(),
        })
    }

    /// Empties the journal and starts it over after checkpoint `base`.
    pub(crate) fn restart(&mut self, base: u64) -> io::Result<()> {
        let file = self.file.try_clone()?;
        *self = Writer::start(file, base)?;
        Ok(())
    }

    /// Takes no more records until started over (a flush or a checkpoint failed: what
    /// follows could not be trusted to be on the disk in order).
    pub(crate) fn set_broken(&mut self, why: String) {
        self.broken = Some(why);
    }

    /// Whether it takes no more records.
    pub(crate) fn is_broken(&self) -> bool {
        self.broken.is_some()
    }

    /// Where it stands now.
    pub(crate) fn mark(&self) -> Mark {
        Mark {
            len: self.len,
            last: self.last,
        }
    }

    /// The journal's length in bytes.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Appends one record; gives the end offset. A failed write is cut back off.
    pub(crate) fn append(&mut self, record: &Record) -> io::Result<u64> {
        if let Some(why) = &self.broken {
            return Err(io::Error::other(why.clone()));
        }
        // The frame, the payload and the trailer in one buffer, written at once.
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        buf.extend_from_slice(&[0; FRAME]);
        let mut buf = record.encode_after(buf);
        let payload_len = buf.len() - FRAME;
        let Ok(len) = u32::try_from(payload_len) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a record of {payload_len} bytes is more than a journal record holds (4 GiB): commit in smaller transactions"
                ),
            ));
        };
        let crc = chained(self.last, &buf[FRAME..]);
        buf[..4].copy_from_slice(&len.to_le_bytes());
        buf[4..8].copy_from_slice(&crc.to_le_bytes());
        let check = crc32fast::hash(&buf[..8]);
        buf[8..12].copy_from_slice(&check.to_le_bytes());
        buf.extend_from_slice(&crc.to_le_bytes());
        let before = self.mark();
        let end = self.len + buf.len() as u64;
        if end > self.allocated {
            self.allocate(end + ALLOCATE);
        }
        let written = write_at(&self.file, &buf, self.len);
        let n = buf.len() as u64;
        // A record of a megabyte or more is not kept waiting for the next.
        if buf.capacity() <= 1 << 20 {
            self.scratch = buf;
        }
        match written {
            Ok(()) => {
                self.len += n;
                self.allocated = self.allocated.max(self.len);
                self.last = crc;
                Ok(self.len)
            }
            Err(e) => {
                self.cut_to(before);
                Err(e)
            }
        }
    }

    /// Writes zeros up to `target`, ahead of the records to come (never over them). A
    /// disk too full for them leaves the file as it was: the records are then appended
    /// one by one.
    fn allocate(&mut self, target: u64) {
        const ZEROS: [u8; 8192] = [0; 8192];
        let from = self.allocated.max(self.len);
        let written = self.file.seek(SeekFrom::Start(from)).and_then(|_| {
            let mut at = from;
            while at < target {
                let n = (target - at).min(ZEROS.len() as u64) as usize;
                self.file.write_all(&ZEROS[..n])?;
                at += n as u64;
            }
            Ok(())
        });
        match written {
            Ok(()) => self.allocated = target,
            // Zeros left past the records (if even this fails) read as a torn tail.
            Err(_) => drop(self.file.set_len(from)),
        }
    }

    /// Cuts the records after `mark` off (a statement written ahead that then failed).
    pub(crate) fn cut_to(&mut self, mark: Mark) {
        match self.file.set_len(mark.len) {
            Ok(()) => {
                self.len = mark.len;
                self.allocated = mark.len;
                self.last = mark.last;
            }
            Err(e) => {
                self.broken = Some(format!(
                    "a failed write could not be cut back off the journal ({e}); reopen the database"
                ));
            }
        }
    }

    /// Flushes what was written to the disk.
    pub(crate) fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    /// Another handle on the file, to flush it without holding the writer.
    pub(crate) fn handle(&self) -> io::Result<File> {
        self.file.try_clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Value;

    fn entry(i: i64) -> Entry {
        Entry {
            text: format!("UPDATE Health SET hp = ?1 WHERE id = {i}"),
            params: ParamValues {
                positional: vec![Value::Int(i), Value::Float(-0.0), Value::Null],
                named: vec![("who".into(), Value::Text("zi'ggy".into()))],
                lenient: false,
            },
            seed: i as u64 * 7,
            tick: i as u64 * 3,
            reader: (i % 2 == 0).then(|| {
                let mut c = EventCursors::from_seen(vec![(EventId::from_raw(3), 9)]);
                c.saw_changes_until(41);
                c
            }),
            rust_systems: if i % 3 == 0 { vec!["heal".into()] } else { vec![] },
        }
    }

    /// A journal of `n` records in a file, and the file's bytes.
    fn journal(n: i64) -> (tempfile_path::Temp, Vec<u8>) {
        let temp = tempfile_path::Temp::new();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&temp.0)
            .unwrap();
        let mut w = Writer::start(file, 5).unwrap();
        for i in 0..n {
            let record = if i == 1 {
                Record::kept(vec![Step::Track(Tracking::Removals(ComponentId::from_raw(2)), 4)])
            } else {
                commit(&[i, i + 1])
            };
            w.append(&record).unwrap();
        }
        let mut bytes = std::fs::read(&temp.0).unwrap();
        // Without the zeros written ahead.
        bytes.truncate(w.len() as usize);
        (temp, bytes)
    }

    mod tempfile_path {
        /// A file name in the temporary folder, removed when dropped.
        pub struct Temp(pub std::path::PathBuf);
        impl Temp {
            pub fn new() -> Temp {
                static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
                let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Temp(std::env::temp_dir().join(format!("ecsql-journal-{}-{n}", std::process::id())))
            }
        }
        impl Drop for Temp {
            fn drop(&mut self) {
                let _ = std::fs::remove_file(&self.0);
            }
        }
    }

    fn commit(entries: &[i64]) -> Record {
        Record {
            steps: entries.iter().map(|&i| Step::Statement(entry(i))).collect(),
            ahead: entries.len() == 1,
        }
    }

    fn records(bytes: &[u8], read: Read) -> Vec<Record> {
        match read {
            Read::Records { records, .. } => records
                .into_iter()
                .map(|(_, r, _)| Record::decode(&bytes[r]).unwrap())
                .collect(),
            Read::Stale => panic!("stale"),
        }
    }

    #[test]
    fn records_read_back_as_written() {
        let (_t, bytes) = journal(4);
        let got = records(&bytes, read(&bytes, 5).unwrap());
        assert_eq!(got.len(), 4);
        assert_eq!(got[0], commit(&[0, 1]));
        assert_eq!(
            got[1],
            Record::kept(vec![Step::Track(Tracking::Removals(ComponentId::from_raw(2)), 4)])
        );
        assert_eq!(got[3], commit(&[3, 4]));
    }

    #[test]
    fn a_record_read_over_another_is_read_whole() {
        let mut kinds = vec![
            commit(&[0, 1]),
            commit(&[3]),
            Record::kept(vec![Step::Track(Tracking::Changes(ComponentId::from_raw(7)), 2)]),
            commit(&[2, 6, 9]),
            Record::kept(vec![
                Step::RustSystem {
                    name: "heal".into(),
                    clauses: "WRITES Health".into(),
                    tick: 5,
                },
                Step::Statement(entry(4)),
            ]),
            Record::kept(Vec::new()),
        ];
        // A statement of no parameters, reader or systems read over one with them.
        let mut bare = entry(1);
        (bare.params, bare.reader, bare.rust_systems) = (ParamValues::default(), None, Vec::new());
        kinds.push(Record::kept(vec![Step::Statement(bare)]));
        for first in &kinds {
            for second in &kinds {
                let mut record = first.clone();
                record.decode_over(&second.encode_after(Vec::new())).unwrap();
                assert_eq!(&record, second, "read over {first:?}");
            }
        }
    }

    #[test]
    fn a_journal_of_another_checkpoint_is_stale() {
        let (_t, bytes) = journal(2);
        assert!(matches!(read(&bytes, 6), Ok(Read::Stale)));
        // A journal newer than its snapshot: the snapshot was put back from before it.
        let e = read(&bytes, 4).unwrap_err();
        assert!(
            e.message.contains("the snapshot is older than its journal"),
            "{e:?}"
        );
        assert!(matches!(read(&bytes[..10], 5), Ok(Read::Stale)));
        assert!(matches!(read(&[], 5), Ok(Read::Stale)));
    }

    #[test]
    fn every_cut_of_the_last_record_is_a_torn_tail() {
        let (_t, bytes) = journal(3);
        let Read::Records { records: all, .. } = read(&bytes, 5).unwrap() else {
            panic!()
        };
        let last = all[2].0 as usize;
        for cut in last..bytes.len() {
            match read(&bytes[..cut], 5).unwrap() {
                // Only its trailer missing: the record itself is whole and kept.
                Read::Records { records, .. } if cut >= bytes.len() - TRAILER => {
                    assert_eq!(records.len(), 3, "cut at {cut}");
                }
                Read::Records { records, valid, .. } => {
                    assert_eq!(records.len(), 2, "cut at {cut}");
                    assert_eq!(valid as usize, last);
                }
                Read::Stale => panic!("cut at {cut}"),
            }
        }
    }

    #[test]
    fn a_flipped_byte_is_refused_with_its_offset_wherever_it_is() {
        let (_t, bytes) = journal(3);
        let Read::Records { records: all, .. } = read(&bytes, 5).unwrap() else {
            panic!()
        };
        // A record's trailer only tells a whole record from a cut one: a flip there
        // harms no record whose checksum matches.
        let trailers: Vec<usize> = all.iter().map(|(_, payload, _)| payload.end).collect();
        let in_trailer = |at: usize| trailers.iter().any(|&t| (t..t + TRAILER).contains(&at));
        // Every bit of every byte, with the zeros a journal keeps written ahead of its
        // records after them (a flip among those harms no record).
        let end = bytes.len();
        let mut ahead = bytes.clone();
        ahead.extend_from_slice(&[0; 64]);
        for at in 0..ahead.len() {
            for bit in 0..8 {
                let mut damaged = ahead.clone();
                damaged[at] ^= 1 << bit;
                let read = read(&damaged, 5);
                if in_trailer(at) || at >= end {
                    assert_eq!(records(&damaged, read.unwrap()).len(), 3, "flip at {at}");
                } else {
                    match read {
                        Err(d) => assert!(d.offset as usize <= at, "flip at {at}: {d:?}"),
                        Ok(other) => panic!("flip of bit {bit} at {at} read as {other:?}"),
                    }
                }
            }
        }
    }

    /// A write the process did not finish, into the zeros written ahead: a prefix of the
    /// record's bytes there, the rest still zeros. Cut off, never refused.
    #[test]
    fn a_last_record_written_in_part_over_zeros_is_torn() {
        let (_t, bytes) = journal(3);
        let Read::Records { records: all, .. } = read(&bytes, 5).unwrap() else {
            panic!()
        };
        let last = all[2].0 as usize;
        let mut zeros = bytes.clone();
        zeros.extend_from_slice(&[0; 4096]);
        // A prefix written (a process killed in its write).
        for cut in last..bytes.len() - TRAILER {
            let mut torn = zeros.clone();
            torn[cut..bytes.len()].fill(0);
            let got = records(&torn, read(&torn, 5).unwrap());
            assert_eq!(got.len(), 2, "written up to {cut}");
        }
    }

    #[test]
    fn a_zeroed_tail_is_torn_and_a_newer_version_refused() {
        let (_t, mut bytes) = journal(2);
        let end = bytes.len();
        bytes.extend_from_slice(&[0; 4096]);
        let Read::Records { valid, .. } = read(&bytes, 5).unwrap() else {
            panic!()
        };
        assert_eq!(valid as usize, end);
        let mut newer = header(5).to_vec();
        newer[8] = 9;
        let crc = crc32fast::hash(&newer[..20]);
        newer[20..].copy_from_slice(&crc.to_le_bytes());
        let e = read(&newer, 5).unwrap_err();
        assert!(e.message.contains("version 9 is newer"), "{e:?}");
    }

    #[test]
    fn a_cut_back_write_leaves_the_journal_as_it_was() {
        let (t, _) = journal(2);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&t.0)
            .unwrap();
        let Read::Records { valid, last, .. } = read(&std::fs::read(&t.0).unwrap(), 5).unwrap() else {
            panic!()
        };
        let mut w = Writer::resume(file, valid, last).unwrap();
        let mark = w.mark();
        w.append(&commit(&[9])).unwrap();
        w.cut_to(mark);
        w.append(&commit(&[8])).unwrap();
        let bytes = std::fs::read(&t.0).unwrap();
        let got = records(&bytes, read(&bytes, 5).unwrap());
        assert_eq!(got.len(), 3);
        assert_eq!(got[2], commit(&[8]));
    }
}
