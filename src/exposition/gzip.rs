//! gzip for a body whose large head is fixed per snapshot and whose small tail changes per
//! scrape.
//!
//! The head is compressed once into a deflate stream that ends with a sync flush instead of a
//! final block; each response appends the tail as stored (uncompressed) deflate blocks, the
//! last one final, then the gzip trailer, whose CRC-32 is combined from the head's and the
//! tail's. The result is one ordinary gzip member. A scrape costs a CRC over a few kilobytes,
//! not a compression: the tail is small, and sending it uncompressed costs less than
//! compressing it.

use std::io::Write as _;

use bytes::Bytes;
use flate2::Compression;
use flate2::write::DeflateEncoder;

/// Whether an `Accept-Encoding` header allows gzip (`gzip`, `x-gzip` or `*` with q > 0).
pub fn accepted(accept_encoding: Option<&str>) -> bool {
    accept_encoding.is_some_and(|value| {
        super::weighted(value)
            .any(|(name, q)| matches!(name.as_str(), "gzip" | "x-gzip" | "*") && q > 0.0)
    })
}

/// gzip member header: magic, deflate, no flags, no time, no extra flags, unknown OS.
const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

/// Largest stored deflate block.
const STORED_MAX: usize = 65_535;

/// Level of the cached head: fast, because it is redone for every snapshot and holds the
/// snapshot in memory meanwhile; metrics text compresses well even so.
const HEAD_LEVEL: u32 = 1;

/// The fixed head of a gzip body: header and deflate blocks ending in a sync flush.
#[derive(Debug, Clone)]
pub struct GzipPrefix {
    bytes: Bytes,
    crc: crc32fast::Hasher,
    len: u64,
}

impl GzipPrefix {
    /// Compresses these chunks as the head of a gzip member.
    pub fn new(chunks: &[Bytes]) -> Self {
        let total: usize = chunks.iter().map(Bytes::len).sum();
        let mut out = Vec::with_capacity(total / 8 + 64);
        out.extend_from_slice(&HEADER);
        let mut encoder = DeflateEncoder::new(out, Compression::new(HEAD_LEVEL));
        let mut crc = crc32fast::Hasher::new();
        for chunk in chunks {
            crc.update(chunk);
            // Writing into a Vec cannot fail.
            let _ = encoder.write_all(chunk);
        }
        // A sync flush ends the last block on a byte boundary without marking it final.
        let _ = encoder.flush();
        GzipPrefix {
            bytes: Bytes::from(std::mem::take(encoder.get_mut())),
            crc,
            len: total as u64,
        }
    }

    /// Size of the compressed head.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether the head is empty (it never is: it holds at least the header).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The whole gzip body for this head followed by `tail`: head, stored tail, trailer.
    pub fn finish(&self, tail: &[u8]) -> [Bytes; 2] {
        let blocks = tail.len().div_ceil(STORED_MAX).max(1);
        let mut rest = Vec::with_capacity(tail.len() + blocks * 5 + 8);
        let mut chunks = tail.chunks(STORED_MAX).peekable();
        if chunks.peek().is_none() {
            rest.extend_from_slice(&[1, 0, 0, 0xff, 0xff]); // an empty final stored block
        }
        while let Some(chunk) = chunks.next() {
            // The head ended byte-aligned, so each block header is a whole byte: BFINAL, then
            // BTYPE 00 (stored); then LEN and its complement.
            rest.push(u8::from(chunks.peek().is_none()));
            let len = chunk.len() as u16;
            rest.extend_from_slice(&len.to_le_bytes());
            rest.extend_from_slice(&(!len).to_le_bytes());
            rest.extend_from_slice(chunk);
        }
        let mut crc = crc32fast::Hasher::new();
        crc.update(tail);
        let mut whole = self.crc.clone();
        whole.combine(&crc);
        rest.extend_from_slice(&whole.finalize().to_le_bytes());
        // ISIZE is the length modulo 2^32, as RFC 1952 says.
        rest.extend_from_slice(&((self.len + tail.len() as u64) as u32).to_le_bytes());
        [self.bytes.clone(), Bytes::from(rest)]
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;

    use super::*;

    fn gunzip(parts: &[Bytes]) -> Vec<u8> {
        let joined = parts.concat();
        let mut out = Vec::new();
        // GzDecoder reads one member only: the body must be one member.
        flate2::read::GzDecoder::new(&joined[..])
            .read_to_end(&mut out)
            .expect("a valid gzip member");
        out
    }

    #[test]
    fn head_and_tail_decompress_to_their_concatenation() {
        let head: Vec<Bytes> = (0..200)
            .map(|i| {
                Bytes::from(format!(
                    "reputation_senderscore{{asset=\"192.0.2.{i}\"}} {i}\n"
                ))
            })
            .collect();
        let prefix = GzipPrefix::new(&head);
        let long_tail = "x 1\n".repeat(40_000);
        for tail in [&b""[..], b"reputation_up 1\n# EOF\n", long_tail.as_bytes()] {
            let body = prefix.finish(tail);
            let mut expected = head.concat();
            expected.extend_from_slice(tail);
            assert_eq!(gunzip(&body), expected);
        }
        assert!(
            prefix.len() < head.concat().len() / 3,
            "the head is compressed"
        );
    }

    #[test]
    fn an_empty_head_still_makes_a_valid_member() {
        let prefix = GzipPrefix::new(&[]);
        assert_eq!(gunzip(&prefix.finish(b"x 1\n")), b"x 1\n");
    }
}
