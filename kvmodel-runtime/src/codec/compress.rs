//! Compressed records: what `compress: { codec, above }` stores, and how any
//! stored value is opened again whatever the entity declares today.
//!
//! A compressed value starts with a header no record envelope starts with:
//!
//! ```text
//! 0xC1  codec (1 = lz4, 2 = zstd)  decompressed length (u32, little endian)  compressed bytes
//! ```
//!
//! `0xC1` is a byte MessagePack never uses and JSON never starts with, so a
//! reader tells a compressed value from a plain record by its first byte, and
//! the codec from the second: records written before a change of codec or
//! threshold (or before `compress` was added or removed) stay readable.
//!
//! Stored bytes are not trusted. The decompressed length the header declares
//! must be at most [`MAX_DECOMPRESSED`] (64 MiB, the most any record may
//! have), and it is never what an allocation is sized from: lz4 output is
//! also bounded by what the compressed bytes can expand to, and zstd output
//! is read incrementally and cut at the declared length. A value that does
//! not decompress to exactly the declared length is an [`Error::Decode`]
//! naming the key.

use std::borrow::Cow;

use crate::error::{Error, Result};

/// The first byte of every compressed value.
pub const MAGIC: u8 = 0xC1;

/// Header length: magic, codec, decompressed length.
const HEADER: usize = 6;

/// The most a stored value may decompress to, in bytes: 64 MiB, the most any
/// record may have (an entity's `max_size` is at most this much). Reading a
/// value that declares more is an error, whatever the entity's limit is
/// today, so that lowering `max_size` leaves older records readable. The
/// record limit ([`MAX_RECORD_BYTES`](crate::codec::record::MAX_RECORD_BYTES))
/// is this value: it is defined here, below the envelope that reads
/// compressed values.
pub const MAX_DECOMPRESSED: usize = 64 * 1024 * 1024;

/// The most one byte of an lz4 block can expand to (a match length
/// extension byte adds at most 255 bytes), with room for a sequence's fixed
/// part.
const LZ4_MAX_RATIO: usize = 255;

/// A compression codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Codec {
    /// lz4 (lz4_flex, block format): fast, always available.
    Lz4,
    /// zstd (level 3): smaller, behind the `zstd` feature.
    Zstd,
}

impl Codec {
    /// The codec's byte in the header.
    const fn id(self) -> u8 {
        match self {
            Codec::Lz4 => 1,
            Codec::Zstd => 2,
        }
    }

    /// The codec's name as schemas spell it.
    pub const fn name(self) -> &'static str {
        match self {
            Codec::Lz4 => "lz4",
            Codec::Zstd => "zstd",
        }
    }
}

/// `compress: { codec, above }`: records whose encoded envelope is at least
/// `above` bytes are stored compressed with `codec`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compress {
    /// The codec.
    pub codec: Codec,
    /// The threshold in bytes: an encoded record this large or larger is
    /// compressed; a smaller one is stored as it is.
    pub above: usize,
}

/// Whether `bytes` are a compressed value (rather than a plain record).
pub fn is_compressed(bytes: &[u8]) -> bool {
    bytes.first() == Some(&MAGIC)
}

/// `encoded` (a record envelope of `key`) compressed with `codec`, header
/// included.
pub fn pack(key: &str, codec: Codec, encoded: &[u8]) -> Result<Vec<u8>> {
    let len = u32::try_from(encoded.len()).map_err(|_| Error::Encode {
        key: key.to_owned(),
        reason: format!(
            "the record is {} bytes, too large to compress (at most {MAX_DECOMPRESSED})",
            encoded.len()
        ),
    })?;
    let mut out = Vec::with_capacity(HEADER + encoded.len() / 2 + 16);
    out.push(MAGIC);
    out.push(codec.id());
    out.extend_from_slice(&len.to_le_bytes());
    match codec {
        Codec::Lz4 => out.extend_from_slice(&lz4_flex::block::compress(encoded)),
        Codec::Zstd => zstd_pack(key, encoded, &mut out)?,
    }
    Ok(out)
}

#[cfg(feature = "zstd")]
fn zstd_pack(key: &str, encoded: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let packed = zstd::bulk::compress(encoded, 3).map_err(|e| Error::Encode {
        key: key.to_owned(),
        reason: format!("zstd could not compress it ({e})"),
    })?;
    out.extend_from_slice(&packed);
    Ok(())
}

#[cfg(not(feature = "zstd"))]
fn zstd_pack(key: &str, _encoded: &[u8], _out: &mut Vec<u8>) -> Result<()> {
    Err(Error::Encode {
        key: key.to_owned(),
        reason: "its entity compresses with zstd, which this build cannot write: enable \
                 kvmodel's `zstd` feature"
            .to_owned(),
    })
}

/// The record envelope stored at `key`: `bytes` themselves for a plain
/// record, decompressed for a compressed value, or [`Error::Decode`] naming
/// the key for a value that is forged, truncated, declares more than
/// `MAX_DECOMPRESSED`, or uses a codec this build cannot read.
pub fn open<'a>(key: &str, bytes: &'a [u8]) -> Result<Cow<'a, [u8]>> {
    if !is_compressed(bytes) {
        return Ok(Cow::Borrowed(bytes));
    }
    let bad = |why: String| Error::decode(key, why, None);
    let Some((head, body)) = bytes.split_at_checked(HEADER) else {
        return Err(bad(format!(
            "it is a compressed value cut short: {} bytes, fewer than its {HEADER}-byte header",
            bytes.len()
        )));
    };
    let declared = u32::from_le_bytes([head[2], head[3], head[4], head[5]]);
    let declared = usize::try_from(declared).unwrap_or(usize::MAX);
    if declared > MAX_DECOMPRESSED {
        return Err(bad(format!(
            "it is a compressed value that declares {declared} bytes decompressed, more than \
             the {MAX_DECOMPRESSED} any record may have (a forged value?)"
        )));
    }
    let out = match head[1] {
        1 => lz4_open(key, body, declared)?,
        2 => zstd_open(key, body, declared)?,
        other => {
            return Err(bad(format!(
                "it is compressed with an unknown codec (id {other}); it was written by a newer \
                 kvmodel, or forged"
            )));
        }
    };
    Ok(Cow::Owned(out))
}

fn lz4_open(key: &str, body: &[u8], declared: usize) -> Result<Vec<u8>> {
    // A size prefix is not trusted for an allocation: no lz4 block expands
    // more than LZ4_MAX_RATIO times.
    let most = body.len().saturating_mul(LZ4_MAX_RATIO).saturating_add(16);
    if declared > most {
        return Err(Error::decode(
            key,
            format!(
                "it is an lz4 value of {} bytes that declares {declared} bytes decompressed, \
                 more than it can hold (a forged value?)",
                body.len()
            ),
            None,
        ));
    }
    let mut out = vec![0; declared];
    match lz4_flex::block::decompress_into(body, &mut out) {
        Ok(n) if n == declared => Ok(out),
        Ok(n) => Err(Error::decode(
            key,
            format!(
                "its lz4 value decompresses to {n} bytes, not the {declared} its header declares \
                 (truncated or forged)"
            ),
            None,
        )),
        Err(e) => Err(Error::decode(
            key,
            format!("its lz4 value does not decompress, truncated or forged ({e})"),
            Some(Box::new(e)),
        )),
    }
}

#[cfg(feature = "zstd")]
fn zstd_open(key: &str, body: &[u8], declared: usize) -> Result<Vec<u8>> {
    use std::io::Read;
    let broken = |e: std::io::Error| {
        Error::decode(
            key,
            format!("its zstd value does not decompress, truncated or forged ({e})"),
            Some(Box::new(e)),
        )
    };
    let mut decoder = zstd::stream::read::Decoder::with_buffer(body).map_err(broken)?;
    // A window larger than any record needs is refused before it is
    // allocated (zstd writes records of at most 64 MiB with 2 MiB windows).
    decoder.window_log_max(26).map_err(broken)?;
    // Read incrementally, at most one byte past the declared length: a
    // frame that expands without end is cut there.
    let mut out = Vec::with_capacity(declared.min(64 * 1024));
    let limit = u64::try_from(declared)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    decoder.take(limit).read_to_end(&mut out).map_err(broken)?;
    if out.len() != declared {
        return Err(Error::decode(
            key,
            format!(
                "its zstd value decompresses to {}{} bytes, not the {declared} its header \
                 declares (truncated or forged)",
                if out.len() > declared {
                    "more than "
                } else {
                    ""
                },
                out.len().min(declared)
            ),
            None,
        ));
    }
    Ok(out)
}

#[cfg(not(feature = "zstd"))]
fn zstd_open(key: &str, _body: &[u8], _declared: usize) -> Result<Vec<u8>> {
    Err(Error::decode(
        key,
        "it is compressed with zstd, which this build cannot read: enable kvmodel's `zstd` \
         feature",
        None,
    ))
}

/// Expands to nothing in a build that reads and writes zstd records, and to
/// a compile error naming the feature otherwise: the generated code of an
/// entity that compresses with zstd invokes it.
#[cfg(feature = "zstd")]
#[doc(hidden)]
#[macro_export]
macro_rules! __kvmodel_require_zstd {
    ($entity:literal) => {};
}

/// Expands to nothing in a build that reads and writes zstd records, and to
/// a compile error naming the feature otherwise: the generated code of an
/// entity that compresses with zstd invokes it.
#[cfg(not(feature = "zstd"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __kvmodel_require_zstd {
    ($entity:literal) => {
        ::core::compile_error!(::core::concat!(
            "`",
            $entity,
            "` compresses its records with zstd, which needs kvmodel's `zstd` feature: enable \
             it (`kvmodel = { version = \"…\", features = [\"zstd\"] }`) or use `codec = \"lz4\"`"
        ));
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The codec a packed value's header names, `None` for a plain record
    /// (or an unknown codec).
    fn codec_of(bytes: &[u8]) -> Option<Codec> {
        match bytes {
            [MAGIC, 1, ..] => Some(Codec::Lz4),
            [MAGIC, 2, ..] => Some(Codec::Zstd),
            _ => None,
        }
    }

    fn text(n: usize) -> Vec<u8> {
        let mut v = br#"{"v":1,"d":{"body":""#.to_vec();
        while v.len() < n {
            v.extend_from_slice(b"the quick brown fox jumps over the lazy dog ");
        }
        v.truncate(n);
        v
    }

    #[test]
    fn plain_records_are_read_as_they_are() {
        for bytes in [&b"{\"v\":1,\"d\":{}}"[..], b"\x92\x01\x80", b""] {
            assert!(matches!(open("k", bytes).unwrap(), Cow::Borrowed(b) if b == bytes));
        }
    }

    #[test]
    fn both_codecs_round_trip() {
        for codec in [Codec::Lz4, Codec::Zstd] {
            for n in [0, 1, 100, 40_000] {
                let plain = text(n);
                let packed = pack("k", codec, &plain).unwrap();
                assert_eq!(codec_of(&packed), Some(codec));
                assert_eq!(
                    open("k", &packed).unwrap().as_ref(),
                    &plain[..],
                    "{codec:?} {n}"
                );
            }
        }
    }

    fn assert_refused(bytes: &[u8], says: &str) {
        let err = open("blog:post:1", bytes).unwrap_err();
        assert!(matches!(err, Error::Decode { .. }), "{err}");
        let text = err.to_string();
        assert!(
            text.contains("blog:post:1") && text.contains(says),
            "{text}"
        );
    }

    #[test]
    fn forged_and_truncated_values_are_errors() {
        for codec in [Codec::Lz4, Codec::Zstd] {
            let packed = pack("k", codec, &text(5000)).unwrap();
            assert_refused(&packed[..packed.len() / 2], "forged");
            assert_refused(&packed[..3], "cut short");
            let mut flipped = packed.clone();
            for b in flipped.iter_mut().skip(HEADER + 4).step_by(7) {
                *b ^= 0x5a;
            }
            let err = open("k", &flipped);
            // Flipped bytes may still decompress; never to other lengths.
            if let Ok(out) = err {
                assert_eq!(out.len(), 5000);
            }
            // A header that lies about the length, both ways.
            let mut short = packed.clone();
            short[2..6].copy_from_slice(&4000u32.to_le_bytes());
            assert_refused(&short, "4000");
            let mut long = packed.clone();
            long[2..6].copy_from_slice(&6000u32.to_le_bytes());
            assert_refused(&long, "6000");
        }
        assert_refused(&[MAGIC, 9, 0, 0, 0, 0], "unknown codec");
    }

    #[test]
    fn bombs_are_refused_without_allocating_what_they_declare() {
        // An lz4 value that declares 4 GiB, and one that declares 60 MiB
        // with a few bytes behind it.
        let mut huge = vec![MAGIC, 1];
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        huge.extend_from_slice(&[0x1f, b'a', 1, 0, 0xff, 0xff, 0xff]);
        assert_refused(&huge, "more than");
        let mut big = vec![MAGIC, 1];
        big.extend_from_slice(&(60u32 << 20).to_le_bytes());
        big.extend_from_slice(&[0x1f, b'a', 1, 0, 0xff, 0xff, 0xff]);
        assert_refused(&big, "more than it can hold");
        // A zstd frame of 64 MiB of zeros (a few KiB stored) behind a header
        // that declares 1 KiB: cut at 1 KiB + 1.
        let zeros = vec![0u8; MAX_DECOMPRESSED];
        let frame = zstd::bulk::compress(&zeros, 3).unwrap();
        assert!(frame.len() < 64 * 1024, "{}", frame.len());
        let mut bomb = vec![MAGIC, 2];
        bomb.extend_from_slice(&1024u32.to_le_bytes());
        bomb.extend_from_slice(&frame);
        assert_refused(&bomb, "more than 1024 bytes");
    }
}
