//! Per-value LZ4 compression of the sled store's entities (store format 2, the layout of new
//! data folders): each stored entity value is one frame, compressed on its own when that
//! makes it smaller.
//!
//! Why not sled's own compression: sled 0.34 compresses every log message with a fresh zstd
//! context (building Huffman tables per message), which took 14 % of a single insert's
//! server CPU and 35 % of a `$batch`'s and halved bulk write throughput; LZ4 on each value
//! costs about 2 µs per ~1 KiB entity and keeps the folder at 1.2–2.3× the logical size
//! (docs/performance.md, "Disk use").
//!
//! Frame: one tag byte, then
//! - [`RAW`]: the value as it is (small or incompressible values);
//! - [`LZ4`]: the value's length (u32, little-endian), then an LZ4 block of it.

use sled::IVec;

use crate::StoreError;

/// Tag of a frame holding the value unchanged.
const RAW: u8 = 0;
/// Tag of a frame holding an LZ4 block.
const LZ4: u8 = 1;
/// Length of an LZ4 frame's header (tag + u32 length).
const LZ4_HEADER: usize = 5;
/// Values shorter than this are stored raw: LZ4 cannot gain enough on them to pay for its
/// header (and every entity's encoded form is longer than this when it has properties).
const MIN_COMPRESSED_LEN: usize = 64;
/// Largest value a frame may claim to hold (an entity is at most 1 MiB on the wire, its
/// encoded form smaller): a damaged header cannot make a read allocate more.
const MAX_VALUE_LEN: usize = 16 * 1024 * 1024;

/// The frame stored for `value`.
pub(crate) fn encode(value: &[u8]) -> Vec<u8> {
    if value.len() >= MIN_COMPRESSED_LEN && value.len() <= MAX_VALUE_LEN {
        let bound = lz4_flex::block::get_maximum_output_size(value.len());
        let mut frame = vec![0u8; LZ4_HEADER + bound];
        frame[0] = LZ4;
        frame[1..LZ4_HEADER].copy_from_slice(&(value.len() as u32).to_le_bytes());
        if let Ok(n) = lz4_flex::block::compress_into(value, &mut frame[LZ4_HEADER..]) {
            // Keep the compressed form only when it saves more than its header costs.
            if LZ4_HEADER + n < 1 + value.len() {
                frame.truncate(LZ4_HEADER + n);
                return frame;
            }
        }
    }
    let mut frame = Vec::with_capacity(1 + value.len());
    frame.push(RAW);
    frame.extend_from_slice(value);
    frame
}

/// The value a stored frame holds.
pub(crate) fn decode(frame: &IVec) -> Result<IVec, StoreError> {
    match frame.first() {
        Some(&RAW) => Ok(frame.subslice(1, frame.len() - 1)),
        Some(&LZ4) => {
            let len = lz4_len(frame).ok_or_else(|| damaged("a truncated header"))?;
            let mut value = vec![0u8; len];
            match lz4_flex::block::decompress_into(&frame[LZ4_HEADER..], &mut value) {
                Ok(n) if n == len => Ok(IVec::from(value)),
                Ok(_) => Err(damaged("a length that does not match its block")),
                Err(e) => Err(damaged(&e.to_string())),
            }
        }
        Some(tag) => Err(damaged(&format!("the unknown tag {tag}"))),
        None => Err(damaged("no tag")),
    }
}

/// Length of the value a stored frame holds, without decompressing it (the store's logical
/// size counts values, not frames). A damaged frame counts as its own length.
pub(crate) fn value_len(frame: &[u8]) -> usize {
    match frame.first() {
        Some(&RAW) => frame.len() - 1,
        Some(&LZ4) => lz4_len(frame).unwrap_or(frame.len()),
        _ => frame.len(),
    }
}

/// The value length an LZ4 frame's header states, if the header is whole and plausible.
fn lz4_len(frame: &[u8]) -> Option<usize> {
    let bytes: [u8; 4] = frame.get(1..LZ4_HEADER)?.try_into().ok()?;
    let len = u32::from_le_bytes(bytes) as usize;
    (len <= MAX_VALUE_LEN).then_some(len)
}

fn damaged(what: &str) -> StoreError {
    StoreError::Corrupt(format!("a stored entity is damaged: its frame has {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::{RngExt, SeedableRng as _};
    use rand_pcg::Pcg64;

    fn round_trip(value: &[u8]) -> Vec<u8> {
        let frame = encode(value);
        assert_eq!(value_len(&frame), value.len());
        decode(&IVec::from(frame)).expect("decode").to_vec()
    }

    #[test]
    fn repetitive_values_are_compressed_and_small_ones_stored_raw() {
        let text = b"a property value that repeats, ".repeat(30);
        let frame = encode(&text);
        assert_eq!(frame[0], LZ4);
        assert!(
            frame.len() * 3 < text.len(),
            "{} of {}",
            frame.len(),
            text.len()
        );
        assert_eq!(round_trip(&text), text);

        let small = b"short";
        assert_eq!(encode(small), [&[RAW][..], small].concat());
        assert_eq!(round_trip(small), small);
        assert_eq!(round_trip(b""), b"");
    }

    #[test]
    fn incompressible_values_are_stored_raw() {
        // Seeded random bytes: no repeats for LZ4 to find.
        let mut rng = Pcg64::seed_from_u64(7);
        let noise: Vec<u8> = (0..4096).map(|_| RngExt::random(&mut rng)).collect();
        let frame = encode(&noise);
        assert_eq!(frame[0], RAW);
        assert_eq!(frame.len(), noise.len() + 1);
        assert_eq!(round_trip(&noise), noise);
    }

    #[test]
    fn damaged_frames_are_errors_not_panics() {
        let good = encode(&b"0123456789".repeat(20));
        let cases: Vec<Vec<u8>> = vec![
            vec![],
            vec![7, 1, 2, 3],
            vec![LZ4, 1, 2],
            // A header claiming more than any value may hold.
            [&[LZ4][..], &u32::MAX.to_le_bytes(), &good[LZ4_HEADER..]].concat(),
            // The block cut short.
            good[..good.len() - 3].to_vec(),
            // A header claiming a different length than the block holds.
            [&[LZ4][..], &1000u32.to_le_bytes(), &good[LZ4_HEADER..]].concat(),
        ];
        for frame in cases {
            match decode(&IVec::from(frame.clone())) {
                Err(StoreError::Corrupt(_)) => {}
                other => panic!("{frame:?}: {other:?}"),
            }
        }
    }

    proptest! {
        #[test]
        fn every_value_round_trips(
            value in prop::collection::vec(any::<u8>(), 0..3000),
            repeat in 1usize..4,
        ) {
            let value = value.repeat(repeat);
            let frame = encode(&value);
            prop_assert!(frame.len() <= value.len() + 1);
            prop_assert_eq!(value_len(&frame), value.len());
            prop_assert_eq!(decode(&IVec::from(frame)).unwrap().to_vec(), value);
        }

        /// Whatever bytes a damaged folder holds, decoding answers (a value or `Corrupt`) and
        /// never panics; a frame that decodes states its value's length.
        #[test]
        fn arbitrary_frames_never_panic(
            tag in 0u8..3,
            rest in prop::collection::vec(any::<u8>(), 0..600),
        ) {
            let frame = [&[tag][..], &rest].concat();
            match decode(&IVec::from(frame.clone())) {
                Ok(value) => prop_assert_eq!(value_len(&frame), value.len()),
                Err(e) => prop_assert!(matches!(e, StoreError::Corrupt(_))),
            }
        }
    }
}
