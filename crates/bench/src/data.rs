//! What the benchmark writes: key layout, ~1 KiB entities with ten typed properties, `$batch`
//! bodies (Azure docs: "Performing entity group transactions") and the parsing of `$batch` and query responses.

use std::fmt::Write as _;
use std::ops::Range;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

/// Target size of an entity's JSON body in bytes.
pub const ENTITY_BYTES: usize = 1024;
/// `Bucket` takes this many values, so `Bucket eq b` matches 0.1 % of a table.
pub const BUCKETS: u64 = 1000;

/// `total` entities spread over `partitions` partitions of `rows_per_partition` consecutive
/// RowKeys each. Entity `(p, j)` has index `p * rows_per_partition + j`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub total: u64,
    pub partitions: u64,
    pub rows_per_partition: u64,
}

impl Layout {
    pub fn new(total: u64, partitions: u64) -> Layout {
        let partitions = partitions.clamp(1, total.max(1));
        let rows_per_partition = total.div_ceil(partitions).max(1);
        Layout {
            total,
            partitions,
            rows_per_partition,
        }
    }

    pub fn rows_in(&self, p: u64) -> u64 {
        let start = p.saturating_mul(self.rows_per_partition);
        if start >= self.total {
            0
        } else {
            self.rows_per_partition.min(self.total - start)
        }
    }

    /// Partitions that hold at least one entity.
    pub fn used_partitions(&self) -> u64 {
        self.total.div_ceil(self.rows_per_partition).max(1)
    }

    pub fn index(&self, p: u64, j: u64) -> u64 {
        p * self.rows_per_partition + j
    }

    /// Slot count of the interleaved order used by [`Layout::nth`].
    pub fn slots(&self) -> u64 {
        self.partitions * self.rows_per_partition
    }

    /// Slot `n` in partition-interleaved order (consecutive slots hit different partitions);
    /// `None` for the few slots past the end of a short last partition.
    pub fn nth(&self, n: u64) -> Option<(u64, u64)> {
        let p = n % self.partitions;
        let j = n / self.partitions;
        (j < self.rows_in(p)).then_some((p, j))
    }

    pub fn batch_count(&self, batch_size: u64) -> u64 {
        self.partitions * self.rows_per_partition.div_ceil(batch_size.max(1))
    }

    /// Batch `n`: partition `n % partitions`, the `n / partitions`-th chunk of its rows.
    /// `None` when that chunk is empty.
    pub fn batch(&self, n: u64, batch_size: u64) -> Option<(u64, Range<u64>)> {
        let bs = batch_size.max(1);
        let p = n % self.partitions;
        let chunk = n / self.partitions;
        let rows = self.rows_in(p);
        let start = chunk * bs;
        (start < rows).then(|| (p, start..(start + bs).min(rows)))
    }

    /// How many entities have `Bucket == b`.
    pub fn bucket_matches(&self, b: u64) -> u64 {
        let full = self.total / BUCKETS;
        full + u64::from(b < self.total % BUCKETS)
    }
}

pub fn pk(p: u64) -> String {
    format!("p{p:05}")
}

pub fn rk(j: u64) -> String {
    format!("r{j:08}")
}

/// SplitMix64: a tiny deterministic generator (data and workload choices; not for secrets).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`; returns 0 for `n == 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
        }
    }
}

/// The JSON body of entity number `i` with keys `pk`/`rk`: ten custom properties of eight EDM
/// types, padded to about [`ENTITY_BYTES`]. `version` changes `Count` so rewrites differ.
pub fn entity_json(pk: &str, rk: &str, i: u64, version: u64) -> String {
    let mut r = Rng::new(i);
    let mut s = String::with_capacity(ENTITY_BYTES + 64);
    let _ = write!(
        s,
        "{{\"PartitionKey\":\"{pk}\",\"RowKey\":\"{rk}\",\"Name\":\"entity-{i}\","
    );
    let count = ((i.wrapping_add(version)) & 0x7fff_ffff) as i32;
    let _ = write!(s, "\"Count\":{count},\"Bucket\":{},", i % BUCKETS);
    let _ = write!(
        s,
        "\"Big@odata.type\":\"Edm.Int64\",\"Big\":\"{}\",",
        (i as i64).wrapping_mul(1_000_003).wrapping_add(1 << 40)
    );
    let _ = write!(s, "\"Score\":{:.3},", (i % 100_000) as f64 * 0.5 + 0.125);
    let _ = write!(s, "\"Active\":{},", i.is_multiple_of(2));
    let created = 1_577_836_800i64 + (i % 300_000_000) as i64; // from 2020-01-01T00:00:00Z
    let created = chrono::DateTime::from_timestamp(created, 0)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%S.000Z").to_string())
        .unwrap_or_else(|| "2020-01-01T00:00:00.000Z".into());
    let _ = write!(
        s,
        "\"Created@odata.type\":\"Edm.DateTime\",\"Created\":\"{created}\","
    );
    let (a, b) = (r.next_u64(), r.next_u64());
    let _ = write!(
        s,
        "\"Uid@odata.type\":\"Edm.Guid\",\"Uid\":\"{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}\",",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        b >> 52,
        b & 0xffff_ffff_ffff
    );
    let mut blob = [0u8; 96];
    for chunk in blob.chunks_mut(8) {
        let v = r.next_u64().to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
    let _ = write!(
        s,
        "\"Blob@odata.type\":\"Edm.Binary\",\"Blob\":\"{}\",",
        STANDARD.encode(blob)
    );
    s.push_str("\"Description\":\"");
    const WORDS: [&str; 8] = [
        "table",
        "entity",
        "storage",
        "partition",
        "row",
        "bench",
        "query",
        "value",
    ];
    // Bounded: every round adds at least two bytes until the target size.
    while s.len() < ENTITY_BYTES - 2 {
        let w = WORDS[(r.next_u64() % WORDS.len() as u64) as usize];
        if s.len() + w.len() + 1 > ENTITY_BYTES - 2 {
            break;
        }
        s.push_str(w);
        s.push(' ');
    }
    s.push_str("\"}");
    s
}

/// A partial update for MERGE: two existing properties, new values.
pub fn merge_json(version: u64) -> String {
    format!(
        "{{\"Count\":{},\"Score\":{:.3}}}",
        (version & 0x7fff_ffff) as i32,
        (version % 1000) as f64 + 0.5
    )
}

/// A `$batch` request with one change set of inserts (each `Prefer: return-no-content`) into
/// `table`. Returns (Content-Type, body).
pub fn batch_insert_body(base_url: &str, table: &str, entities: &[String]) -> (String, String) {
    let batch = format!("batch_{}", uuid::Uuid::new_v4());
    let cs = format!("changeset_{}", uuid::Uuid::new_v4());
    let size: usize = entities.iter().map(|e| e.len() + 300).sum::<usize>() + 256;
    let mut b = String::with_capacity(size);
    let _ = write!(
        b,
        "--{batch}\r\nContent-Type: multipart/mixed; boundary={cs}\r\n\r\n"
    );
    for e in entities {
        let _ = write!(
            b,
            "--{cs}\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n\
             POST {base_url}/{table} HTTP/1.1\r\n\
             Content-Type: application/json\r\n\
             Accept: application/json;odata=minimalmetadata\r\n\
             Prefer: return-no-content\r\n\
             DataServiceVersion: 3.0;\r\n\r\n\
             {e}\r\n"
        );
    }
    let _ = write!(b, "--{cs}--\r\n--{batch}--\r\n");
    (format!("multipart/mixed; boundary={batch}"), b)
}

/// Sub-response status codes of a `$batch` response body, in order.
pub fn batch_statuses(body: &[u8]) -> Vec<u16> {
    let mut out = Vec::new();
    for line in body.split(|b| *b == b'\n') {
        if let Some(rest) = line.strip_prefix(b"HTTP/1.1 ") {
            let code = rest
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .fold(0u16, |acc, c| {
                    acc.saturating_mul(10).saturating_add(u16::from(c - b'0'))
                });
            out.push(code);
        }
    }
    out
}

/// Entities in a JSON query page: occurrences of the `"PartitionKey"` member.
pub fn count_entities(body: &[u8]) -> u64 {
    memchr::memmem::find_iter(body, b"\"PartitionKey\"").count() as u64
}

/// Percent-encodes a query-string value (everything but unreserved characters).
pub fn encode_query_value(v: &str) -> String {
    const SET: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~');
    percent_encoding::utf8_percent_encode(v, SET).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_even_and_uneven() {
        let l = Layout::new(100_000, 100);
        assert_eq!(l.rows_per_partition, 1000);
        assert_eq!(l.used_partitions(), 100);
        assert_eq!(l.batch_count(100), 1000);
        assert_eq!(l.batch(0, 100), Some((0, 0..100)));
        assert_eq!(l.batch(101, 100), Some((1, 100..200)));
        assert_eq!(l.bucket_matches(7), 100);

        let l = Layout::new(10, 6);
        assert_eq!(l.rows_per_partition, 2);
        assert_eq!(l.used_partitions(), 5);
        assert_eq!(l.rows_in(5), 0);
        let n: u64 = (0..l.slots()).filter(|n| l.nth(*n).is_some()).count() as u64;
        assert_eq!(n, 10);
        let e: u64 = (0..l.batch_count(100))
            .filter_map(|n| l.batch(n, 100))
            .map(|(_, r)| r.end - r.start)
            .sum();
        assert_eq!(e, 10);
        assert_eq!(Layout::new(1500, 7).bucket_matches(499), 2);
        assert_eq!(Layout::new(1500, 7).bucket_matches(500), 1);
        assert_eq!(Layout::new(3, 100).partitions, 3);
    }

    #[test]
    fn every_entity_is_visited_once_in_both_orders() {
        let l = Layout::new(1234, 10);
        let mut seen = vec![0u8; 1234];
        for n in 0..l.slots() {
            if let Some((p, j)) = l.nth(n) {
                seen[l.index(p, j) as usize] += 1;
            }
        }
        assert!(seen.iter().all(|c| *c == 1));
        let mut seen = vec![0u8; 1234];
        for n in 0..l.batch_count(100) {
            if let Some((p, r)) = l.batch(n, 100) {
                for j in r {
                    seen[l.index(p, j) as usize] += 1;
                }
            }
        }
        assert!(seen.iter().all(|c| *c == 1));
    }

    #[test]
    fn entity_is_about_one_kib_of_valid_typed_json() {
        for i in [0u64, 1, 999, 123_456_789] {
            let s = entity_json(&pk(3), &rk(i), i, 0);
            assert!(
                (ENTITY_BYTES - 40..=ENTITY_BYTES + 8).contains(&s.len()),
                "{}",
                s.len()
            );
            let v: serde_json::Value = serde_json::from_str(&s).unwrap();
            let o = v.as_object().unwrap();
            let custom = o
                .keys()
                .filter(|k| !k.contains('@') && *k != "PartitionKey" && *k != "RowKey")
                .count();
            assert_eq!(custom, 10);
            assert_eq!(o["Bucket"].as_u64(), Some(i % BUCKETS));
            assert_eq!(o["Big@odata.type"], "Edm.Int64");
            assert!(o["Score"].is_f64());
            assert_eq!(o["Uid"].as_str().unwrap().len(), 36);
            assert!(STANDARD.decode(o["Blob"].as_str().unwrap()).is_ok());
        }
        assert_ne!(entity_json("a", "b", 5, 0), entity_json("a", "b", 5, 1));
        let m: serde_json::Value = serde_json::from_str(&merge_json(7)).unwrap();
        assert!(m["Score"].is_f64());
    }

    #[test]
    fn batch_body_follows_spec_layout() {
        let es = vec![entity_json("p", "1", 1, 0), entity_json("p", "2", 2, 0)];
        let (ct, body) = batch_insert_body("http://127.0.0.1:1/devstoreaccount1", "t", &es);
        let boundary = ct.strip_prefix("multipart/mixed; boundary=").unwrap();
        assert!(boundary.starts_with("batch_"));
        assert!(body.starts_with(&format!("--{boundary}\r\n")));
        assert!(body.ends_with(&format!("--{boundary}--\r\n")));
        assert_eq!(
            body.matches("POST http://127.0.0.1:1/devstoreaccount1/t HTTP/1.1\r\n")
                .count(),
            2
        );
        assert_eq!(
            body.matches("Content-Type: application/http\r\n").count(),
            2
        );
        assert!(!body.contains("\n\n") || body.contains("\r\n\r\n"));
        assert!(body.lines().all(|l| !l.contains('\r')));
    }

    #[test]
    fn parses_batch_statuses_and_counts_rows() {
        let body = b"--batchresponse_1\r\nContent-Type: multipart/mixed; boundary=changesetresponse_2\r\n\r\n--changesetresponse_2\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 204 No Content\r\nETag: x\r\n\r\n--changesetresponse_2\r\n\r\nHTTP/1.1 409 Conflict\r\n\r\n{}\r\n";
        assert_eq!(batch_statuses(body), vec![204, 409]);
        assert_eq!(
            count_entities(br#"{"value":[{"PartitionKey":"a"},{"PartitionKey":"b"}]}"#),
            2
        );
        assert_eq!(
            encode_query_value("PartitionKey eq 'p' and X ge 'a/b'"),
            "PartitionKey%20eq%20%27p%27%20and%20X%20ge%20%27a%2Fb%27"
        );
    }

    #[test]
    fn rng_below_is_in_range() {
        let mut r = Rng::new(1);
        for n in [1u64, 2, 3, 1000] {
            for _ in 0..1000 {
                assert!(r.below(n) < n);
            }
        }
        assert_eq!(r.below(0), 0);
    }
}
