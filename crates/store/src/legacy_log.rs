//! Drains the write-ahead log of earlier builds into the store, once, at opening.
//!
//! Builds up to 0.1 had an optional write-ahead log (`--write-buffer`, off by default) in a
//! folder `wal` beside sled's files. It was removed because it measured slower than sled's own
//! log on every write workload, with four times the p99 (docs/performance.md): a second log on
//! top of an engine that logs. A server that ran with it and stopped uncleanly may have left
//! acknowledged writes in that folder, so a data folder that still has one is replayed into
//! the store here, flushed, and the folder removed; nothing written is lost.
//!
//! The format, frozen: each file `NNNNNNNNNNNNNNNNNNNN.log` starts with [`HEADER`]; each
//! record is `length u32, crc32 u32, payload` and the payload is `lsn u64, keyspace u8, count
//! u32` then per entry `key length u32, key, 1 + value length u32 + value | 0` (a removal), all
//! little-endian. Files are replayed oldest first and records in order, so the last value of a
//! key wins. A record cut short or failing its checksum at the very end of the last file is a
//! write whose flush never returned (dropped); anywhere else it is damage, and opening fails.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::{Kv, Space, StoreError};

/// First bytes of every log file: what it is and the format version.
const HEADER: &[u8; 8] = b"TSWAL\0\0\x01";
/// The log's folder inside the data folder.
const LOG_DIR: &str = "wal";
/// Entries per backend write while replaying.
const APPLY_CHUNK: usize = 4096;
/// Largest record accepted (a 4 MiB change set encodes well below this).
const MAX_RECORD: u32 = 1 << 30;

type Batch = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// Replays the log an earlier build left in `dir/wal` into `kv` (the data folder's engine,
/// whose lock the caller holds), flushes `kv`, then removes the log folder. Returns the
/// number of records replayed; 0 when there is no log.
pub fn drain<B: Kv>(kv: &B, dir: &Path) -> Result<u64, StoreError> {
    let log_dir = dir.join(LOG_DIR);
    if !log_dir.is_dir() {
        return Ok(0);
    }
    let files = log_files(&log_dir)?;
    let records = replay(kv, &files)?;
    if records > 0 {
        kv.flush()?;
        tracing::info!(
            records,
            files = files.len(),
            "applied the write-ahead log an earlier build left in the data folder"
        );
    }
    std::fs::remove_dir_all(&log_dir)
        .map_err(|e| StoreError::io("removing the drained write-ahead log", e))?;
    Ok(records)
}

/// The log files in `dir`, oldest first.
fn log_files(dir: &Path) -> Result<Vec<PathBuf>, StoreError> {
    let listing = |e| StoreError::io("reading the write-ahead log's folder", e);
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(listing)? {
        let entry = entry.map_err(listing)?;
        let name = entry.file_name();
        let seq = name
            .to_str()
            .and_then(|n| n.strip_suffix(".log"))
            .and_then(|n| n.parse::<u64>().ok());
        if let Some(seq) = seq {
            files.push((seq, entry.path()));
        }
    }
    files.sort();
    Ok(files.into_iter().map(|(_, path)| path).collect())
}

/// Reading one record from a log file.
enum Next {
    Record(Record),
    /// Clean end of the file.
    End,
    /// A record cut short or failing its checksum.
    Bad,
}

#[derive(Debug, PartialEq)]
struct Record {
    lsn: u64,
    space: Space,
    batch: Batch,
}

fn damaged(path: &Path, what: &str) -> StoreError {
    StoreError::Corrupt(format!(
        "the write-ahead log {} left by an earlier build is damaged ({what}) before its end, so \
         acknowledged writes after that point cannot be recovered; restore the data folder \
         from a backup, or move its wal folder away to start without those writes",
        path.display()
    ))
}

/// Applies every record of `files` to `kv` in order; returns how many there were.
fn replay<B: Kv>(kv: &B, files: &[PathBuf]) -> Result<u64, StoreError> {
    let mut last_lsn = 0u64;
    let mut records = 0u64;
    let mut pending: Vec<(Space, Batch)> = Vec::new();
    let mut pending_entries = 0;
    for (i, path) in files.iter().enumerate() {
        let last_file = i + 1 == files.len();
        let file =
            File::open(path).map_err(|e| StoreError::io("opening the write-ahead log", e))?;
        let mut r = std::io::BufReader::with_capacity(1 << 20, file);
        let mut header = [0u8; 8];
        let n = read_full(&mut r, &mut header)?;
        if n < HEADER.len() && last_file && header[..n] == HEADER[..n] {
            continue; // created, its header never reached the disk: empty
        }
        if header[..7] != HEADER[..7] {
            return Err(damaged(path, "not a tablestore write-ahead log"));
        }
        if header[7] != HEADER[7] {
            return Err(StoreError::Corrupt(format!(
                "the write-ahead log {} has format version {}, which this tablestore does not \
                 read; start the version that wrote it once to apply it",
                path.display(),
                header[7]
            )));
        }
        loop {
            match read_record(&mut r)? {
                Next::End => break,
                Next::Record(rec) => {
                    if rec.lsn <= last_lsn {
                        return Err(damaged(path, "records out of order"));
                    }
                    last_lsn = rec.lsn;
                    records += 1;
                    pending_entries += rec.batch.len();
                    pending.push((rec.space, rec.batch));
                    if pending_entries >= APPLY_CHUNK {
                        apply_in_order(kv, std::mem::take(&mut pending))?;
                        pending_entries = 0;
                    }
                }
                Next::Bad => {
                    // A valid record after the bad one means the damage is not a torn tail.
                    let follows = matches!(read_record(&mut r), Ok(Next::Record(_)));
                    if !last_file || follows {
                        return Err(damaged(path, "a record fails its checksum"));
                    }
                    tracing::warn!(
                        file = %path.display(),
                        "dropped the torn end of the write-ahead log (writes whose flush never returned)"
                    );
                    break;
                }
            }
        }
    }
    apply_in_order(kv, pending)?;
    Ok(records)
}

/// Applies records in log order, each keyspace's run of consecutive records as one write.
fn apply_in_order<B: Kv>(kv: &B, records: Vec<(Space, Batch)>) -> Result<(), StoreError> {
    let mut run: Option<(Space, Batch)> = None;
    for (space, batch) in records {
        match &mut run {
            Some((s, entries)) if *s == space => entries.extend(batch),
            _ => {
                if let Some((s, entries)) = run.take() {
                    kv.apply(s, entries)?;
                }
                run = Some((space, batch));
            }
        }
    }
    if let Some((s, entries)) = run {
        kv.apply(s, entries)?;
    }
    Ok(())
}

fn read_record(r: &mut impl Read) -> Result<Next, StoreError> {
    let mut head = [0u8; 8];
    let n = read_full(r, &mut head)?;
    if n == 0 {
        return Ok(Next::End);
    }
    if n < 8 {
        return Ok(Next::Bad);
    }
    let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    let crc = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
    if len > MAX_RECORD {
        return Ok(Next::Bad);
    }
    let mut payload = vec![0u8; len as usize];
    if read_full(r, &mut payload)? < payload.len() || crc32fast::hash(&payload) != crc {
        return Ok(Next::Bad);
    }
    Ok(decode_payload(&payload).map_or(Next::Bad, Next::Record))
}

/// Reads until `buf` is full or the file ends; returns the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> Result<usize, StoreError> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(StoreError::io("reading the write-ahead log", e)),
        }
    }
    Ok(n)
}

/// Decodes a payload whose checksum matched; `None` if it is malformed anyway.
fn decode_payload(p: &[u8]) -> Option<Record> {
    fn take<'a>(p: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        if p.len() < n {
            return None;
        }
        let (head, rest) = p.split_at(n);
        *p = rest;
        Some(head)
    }
    fn u32_of(p: &mut &[u8]) -> Option<usize> {
        Some(u32::from_le_bytes(take(p, 4)?.try_into().ok()?) as usize)
    }
    let mut p = p;
    let lsn = u64::from_le_bytes(take(&mut p, 8)?.try_into().ok()?);
    let space = match take(&mut p, 1)?[0] {
        0 => Space::Tables,
        1 => Space::Entities,
        _ => return None,
    };
    let count = u32_of(&mut p)?;
    let mut batch = Vec::with_capacity(count.min(1 << 16));
    for _ in 0..count {
        let klen = u32_of(&mut p)?;
        let key = take(&mut p, klen)?.to_vec();
        let value = match take(&mut p, 1)?[0] {
            0 => None,
            1 => {
                let vlen = u32_of(&mut p)?;
                Some(take(&mut p, vlen)?.to_vec())
            }
            _ => return None,
        };
        batch.push((key, value));
    }
    p.is_empty().then_some(Record { lsn, space, batch })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::memory::MemoryKv;
    use std::io::Write;

    /// One record as the removed log wrote it.
    fn record(lsn: u64, space: Space, batch: &Batch) -> Vec<u8> {
        let mut payload = lsn.to_le_bytes().to_vec();
        payload.push(match space {
            Space::Tables => 0,
            Space::Entities => 1,
        });
        payload.extend_from_slice(&(batch.len() as u32).to_le_bytes());
        for (k, v) in batch {
            payload.extend_from_slice(&(k.len() as u32).to_le_bytes());
            payload.extend_from_slice(k);
            match v {
                Some(v) => {
                    payload.push(1);
                    payload.extend_from_slice(&(v.len() as u32).to_le_bytes());
                    payload.extend_from_slice(v);
                }
                None => payload.push(0),
            }
        }
        let mut out = (payload.len() as u32).to_le_bytes().to_vec();
        out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        out.extend_from_slice(&payload);
        out
    }

    fn write_log(dir: &Path, seq: u64, body: &[u8]) {
        let log = dir.join(LOG_DIR);
        std::fs::create_dir_all(&log).unwrap();
        let mut f = File::create(log.join(format!("{seq:020}.log"))).unwrap();
        f.write_all(HEADER).unwrap();
        f.write_all(body).unwrap();
    }

    fn value(kv: &MemoryKv, key: &[u8]) -> Option<Vec<u8>> {
        kv.get(Space::Entities, key)
            .unwrap()
            .map(|v| v.as_ref().to_vec())
    }

    #[test]
    fn later_records_win_and_the_folder_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let first: Batch = vec![
            (b"a".to_vec(), Some(b"1".to_vec())),
            (b"b".to_vec(), Some(b"2".to_vec())),
        ];
        let second: Batch = vec![(b"a".to_vec(), Some(b"3".to_vec())), (b"b".to_vec(), None)];
        write_log(dir.path(), 1, &record(1, Space::Entities, &first));
        write_log(dir.path(), 2, &record(2, Space::Entities, &second));
        let kv = MemoryKv::new();
        assert_eq!(drain(&kv, dir.path()).unwrap(), 2);
        assert_eq!(value(&kv, b"a"), Some(b"3".to_vec()));
        assert_eq!(value(&kv, b"b"), None);
        assert!(!dir.path().join(LOG_DIR).exists());
        assert_eq!(drain(&kv, dir.path()).unwrap(), 0, "nothing left to drain");
    }

    #[test]
    fn a_torn_tail_is_dropped_but_damage_before_the_end_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let ok: Batch = vec![(b"k".to_vec(), Some(b"v".to_vec()))];
        let mut body = record(1, Space::Entities, &ok);
        let torn = record(2, Space::Entities, &ok);
        body.extend_from_slice(&torn[..torn.len() - 1]);
        write_log(dir.path(), 1, &body);
        let kv = MemoryKv::new();
        assert_eq!(drain(&kv, dir.path()).unwrap(), 1);
        assert_eq!(value(&kv, b"k"), Some(b"v".to_vec()));

        let dir = tempfile::tempdir().unwrap();
        let mut bad = record(1, Space::Entities, &ok);
        bad[9] ^= 0xFF; // the payload no longer matches its checksum
        write_log(dir.path(), 1, &bad);
        write_log(dir.path(), 2, &record(2, Space::Entities, &ok));
        let e = drain(&MemoryKv::new(), dir.path()).unwrap_err();
        assert!(matches!(e, StoreError::Corrupt(_)), "{e}");
        assert!(dir.path().join(LOG_DIR).exists(), "a damaged log is kept");
    }
}
