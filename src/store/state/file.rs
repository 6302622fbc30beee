//! Snapshots of a data folder as files: `<name>.snapshot` in the snapshot folder beside the
//! data folder. A file is written whole or not at all: into `<name>.snapshot.tmp`, synced,
//! renamed over the old one, and the folder synced; a `.tmp` file a crash left is removed at
//! start-up. A file that does not end with the checksum of everything before it is refused as
//! damaged, never half-read.
//!
//! Layout (integers little-endian): the magic line `tablestore snapshot 1\n`; a header of
//! `u32 length` + JSON (scope, counts, creation time); then records, each a tag byte:
//! `T` a table (account, identity, name, ACL as `u32 length` + bytes, then `u64` rows, each
//! key and value as `u32 length` + bytes), `P` an account's service properties (account,
//! document), and `E` the end, followed by the CRC-32 of every byte before it.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{Image, ImageTable, ShelfError, SnapshotInfo, SnapshotName, StateScope};
use crate::store::StoreError;

const MAGIC: &[u8] = b"tablestore snapshot 1\n";
const EXTENSION: &str = "snapshot";
const UNFINISHED: &str = "snapshot.tmp";
/// Longest header, key, value or name read back (a damaged length fails at once rather than
/// allocating gigabytes).
const MAX_FIELD: u32 = 64 * 1024 * 1024;

#[derive(Serialize, Deserialize)]
struct Header {
    /// `null` for the whole server, else the account.
    account: Option<String>,
    tables: usize,
    entities: u64,
    data_bytes: u64,
    created: i64,
}

fn path_of(dir: &Path, name: &SnapshotName) -> PathBuf {
    dir.join(format!("{}.{EXTENSION}", name.as_str()))
}

fn io_error(doing: String) -> impl FnOnce(std::io::Error) -> ShelfError {
    move |e| {
        if e.kind() == std::io::ErrorKind::StorageFull || e.raw_os_error() == Some(28) {
            ShelfError::NoSpace(e)
        } else {
            ShelfError::Store(StoreError::io(doing, e))
        }
    }
}

/// Removes the files of saves a crash interrupted.
pub(super) fn remove_unfinished(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(&format!(".{UNFINISHED}")))
        {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// A writer that checksums what it writes.
struct Summed<W: Write> {
    inner: W,
    crc: crc32fast::Hasher,
}

impl<W: Write> Write for Summed<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn put_bytes(out: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
    out.write_all(&(bytes.len() as u32).to_le_bytes())?;
    out.write_all(bytes)
}

fn encode(out: &mut impl Write, image: &Image, created: i64) -> std::io::Result<()> {
    out.write_all(MAGIC)?;
    let header = Header {
        account: image.scope.account().map(str::to_string),
        tables: image.tables.len(),
        entities: image.entities(),
        data_bytes: image.data_bytes(),
        created,
    };
    put_bytes(
        out,
        &serde_json::to_vec(&header).map_err(std::io::Error::other)?,
    )?;
    for table in &image.tables {
        out.write_all(b"T")?;
        put_bytes(out, table.account.as_bytes())?;
        put_bytes(out, table.identity.as_bytes())?;
        put_bytes(out, table.name.as_bytes())?;
        put_bytes(out, &table.acl)?;
        out.write_all(&(table.rows.len() as u64).to_le_bytes())?;
        for (key, value) in &table.rows {
            put_bytes(out, key)?;
            put_bytes(out, value)?;
        }
    }
    for (account, properties) in &image.service_properties {
        out.write_all(b"P")?;
        put_bytes(out, account.as_bytes())?;
        put_bytes(out, properties)?;
    }
    out.write_all(b"E")
}

/// Writes `image` as snapshot `name`, replacing any of that name; returns the file's size.
/// On any failure (a full disk among them) the old snapshot, if any, is left as it was and
/// nothing of the new one remains.
pub(super) fn write(
    dir: &Path,
    name: &SnapshotName,
    image: &Image,
    created: i64,
) -> Result<u64, ShelfError> {
    std::fs::create_dir_all(dir).map_err(io_error(format!(
        "creating the snapshot folder {}",
        dir.display()
    )))?;
    let tmp = dir.join(format!("{}.{UNFINISHED}", name.as_str()));
    let written = (|| -> std::io::Result<u64> {
        let file = File::create(&tmp)?;
        let mut out = Summed {
            inner: BufWriter::with_capacity(1 << 20, file),
            crc: crc32fast::Hasher::new(),
        };
        encode(&mut out, image, created)?;
        let crc = out.crc.clone().finalize();
        let mut inner = out.inner;
        inner.write_all(&crc.to_le_bytes())?;
        let file = inner.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        let bytes = file.metadata()?.len();
        std::fs::rename(&tmp, path_of(dir, name))?;
        File::open(dir)?.sync_all()?;
        Ok(bytes)
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io_error(format!("writing snapshot {}", name.as_str()))(e)
    })
}

/// A reader of a snapshot file's fields.
struct Fields<R: Read> {
    inner: R,
    crc: crc32fast::Hasher,
}

impl<R: Read> Fields<R> {
    fn exact(&mut self, n: usize) -> std::io::Result<Vec<u8>> {
        let mut buf = vec![0; n];
        self.inner.read_exact(&mut buf)?;
        self.crc.update(&buf);
        Ok(buf)
    }

    fn u32(&mut self) -> std::io::Result<u32> {
        let b = self.exact(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> std::io::Result<u64> {
        let b = self.exact(8)?;
        Ok(u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
    }

    fn bytes(&mut self) -> std::io::Result<Vec<u8>> {
        let n = self.u32()?;
        if n > MAX_FIELD {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "field too long",
            ));
        }
        self.exact(n as usize)
    }

    fn text(&mut self) -> std::io::Result<String> {
        String::from_utf8(self.bytes()?)
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8"))
    }
}

fn damaged(name: &SnapshotName) -> ShelfError {
    ShelfError::Store(StoreError::Corrupt(format!(
        "snapshot {} is damaged (its file is cut short or altered); save it again",
        name.as_str()
    )))
}

fn open(dir: &Path, name: &SnapshotName) -> Result<Fields<BufReader<File>>, ShelfError> {
    let file = match File::open(path_of(dir, name)) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ShelfError::NotFound),
        Err(e) => {
            return Err(io_error(format!("reading snapshot {}", name.as_str()))(e));
        }
    };
    Ok(Fields {
        inner: BufReader::with_capacity(1 << 20, file),
        crc: crc32fast::Hasher::new(),
    })
}

fn header(fields: &mut Fields<impl Read>) -> std::io::Result<Header> {
    if fields.exact(MAGIC.len())? != MAGIC {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not a snapshot",
        ));
    }
    serde_json::from_slice(&fields.bytes()?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

fn scope_of(header: &Header) -> StateScope {
    match &header.account {
        Some(a) => StateScope::Account(a.clone()),
        None => StateScope::Server,
    }
}

/// Reads snapshot `name` whole, checking its checksum.
pub(super) fn read(dir: &Path, name: &SnapshotName) -> Result<(Image, i64), ShelfError> {
    let mut fields = open(dir, name)?;
    let decoded = (|| -> std::io::Result<(Image, i64)> {
        let header = header(&mut fields)?;
        let mut image = Image::empty(scope_of(&header));
        loop {
            match fields.exact(1)?[0] {
                b'T' => {
                    let account = fields.text()?;
                    let identity = fields.text()?;
                    let name = fields.text()?;
                    let acl = fields.bytes()?;
                    let n = fields.u64()?;
                    let mut rows = Vec::with_capacity(n.min(1 << 20) as usize);
                    for _ in 0..n {
                        let key = fields.bytes()?.into_boxed_slice();
                        let value: Arc<[u8]> = fields.bytes()?.into();
                        rows.push((key, value));
                    }
                    image.tables.push(ImageTable {
                        account,
                        identity,
                        name,
                        acl,
                        rows,
                    });
                }
                b'P' => {
                    let account = fields.text()?;
                    let properties = fields.bytes()?;
                    image.service_properties.push((account, properties));
                }
                b'E' => break,
                _ => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        "unknown record",
                    ))
                }
            }
        }
        let expected = fields.crc.clone().finalize();
        let mut stored = [0u8; 4];
        fields.inner.read_exact(&mut stored)?;
        if u32::from_le_bytes(stored) != expected {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "checksum",
            ));
        }
        let mut rest = [0u8; 1];
        if fields.inner.read(&mut rest)? != 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "trailing bytes",
            ));
        }
        Ok((image, header.created))
    })();
    decoded.map_err(|_| damaged(name))
}

/// The header of snapshot `name`.
pub(super) fn info(dir: &Path, name: &SnapshotName) -> Result<SnapshotInfo, ShelfError> {
    let mut fields = open(dir, name)?;
    let header = header(&mut fields).map_err(|_| damaged(name))?;
    let file_bytes = std::fs::metadata(path_of(dir, name)).ok().map(|m| m.len());
    Ok(SnapshotInfo {
        name: name.as_str().to_string(),
        scope: scope_of(&header),
        tables: header.tables,
        entities: header.entities,
        data_bytes: header.data_bytes,
        file_bytes,
        created: header.created,
    })
}

/// Every snapshot in the folder, by name (damaged ones are left out of the list).
pub(super) fn list(dir: &Path) -> Result<Vec<SnapshotInfo>, ShelfError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(format!("reading {}", dir.display()))(e)),
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(stem) = file_name
            .to_str()
            .and_then(|n| n.strip_suffix(&format!(".{EXTENSION}")))
        else {
            continue;
        };
        let Ok(name) = SnapshotName::parse(stem) else {
            continue;
        };
        if let Ok(info) = info(dir, &name) {
            out.push(info);
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

pub(super) fn delete(dir: &Path, name: &SnapshotName) -> Result<(), ShelfError> {
    match std::fs::remove_file(path_of(dir, name)) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(ShelfError::NotFound),
        Err(e) => Err(io_error(format!("deleting snapshot {}", name.as_str()))(e)),
    }
}
