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

use super::piece::{LEVEL, Piece};

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

/// The fixed head of a gzip body: the header, then deflate blocks ending in a sync flush:
/// compressed runs of plain pieces between packed pieces, which are taken as they are.
#[derive(Debug, Clone)]
pub struct GzipPrefix {
    segments: Vec<Bytes>,
    crc: crc32fast::Hasher,
    len: u64,
}

impl GzipPrefix {
    /// The head of a gzip member holding these pieces: each run of plain pieces compressed,
    /// each packed piece shared.
    pub fn new(pieces: &[Piece]) -> Self {
        let mut head = GzipPrefix {
            segments: vec![Bytes::from_static(&HEADER)],
            crc: crc32fast::Hasher::new(),
            len: 0,
        };
        let mut run: Option<DeflateEncoder<Vec<u8>>> = None;
        for piece in pieces {
            head.len += piece.len() as u64;
            match piece {
                Piece::Plain(lines) => {
                    head.crc.update(lines);
                    let encoder = run.get_or_insert_with(|| {
                        DeflateEncoder::new(Vec::new(), Compression::new(LEVEL))
                    });
                    // Writing into a Vec cannot fail.
                    let _ = encoder.write_all(lines);
                }
                Piece::Packed(packed) => {
                    head.end_run(run.take());
                    head.crc.combine(&packed.crc());
                    head.segments.push(packed.deflated().clone());
                }
            }
        }
        head.end_run(run);
        head
    }

    /// Ends a run of plain pieces with a sync flush: its last block ends on a byte boundary
    /// without being final.
    fn end_run(&mut self, run: Option<DeflateEncoder<Vec<u8>>>) {
        if let Some(mut encoder) = run {
            let _ = encoder.flush();
            let mut bytes = std::mem::take(encoder.get_mut());
            bytes.shrink_to_fit();
            self.segments.push(Bytes::from(bytes));
        }
    }

    /// Size of the compressed head.
    pub fn len(&self) -> usize {
        self.segments.iter().map(Bytes::len).sum()
    }

    /// Whether the head is empty (it never is: it holds at least the header).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The whole gzip body for this head followed by `tail`: head, stored tail, trailer.
    pub fn finish(&self, tail: &[u8]) -> Vec<Bytes> {
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
        let mut body = self.segments.clone();
        body.push(Bytes::from(rest));
        body
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;

    use super::*;
    use crate::exposition::piece::Packed;

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
        let lines: Vec<Bytes> = (0..200)
            .map(|i| {
                Bytes::from(format!(
                    "reputation_senderscore{{asset=\"192.0.2.{i}\"}} {i}\n"
                ))
            })
            .collect();
        let head: Vec<Piece> = lines.iter().cloned().map(Piece::Plain).collect();
        let prefix = GzipPrefix::new(&head);
        let long_tail = "x 1\n".repeat(40_000);
        for tail in [&b""[..], b"reputation_up 1\n# EOF\n", long_tail.as_bytes()] {
            let body = prefix.finish(tail);
            let mut expected = lines.concat();
            expected.extend_from_slice(tail);
            assert_eq!(gunzip(&body), expected);
        }
        assert!(
            prefix.len() < lines.concat().len() / 3,
            "the head is compressed"
        );
    }

    #[test]
    fn packed_pieces_join_the_compressed_runs_of_plain_ones_in_one_member() {
        let lines: Vec<Bytes> = (0..60)
            .map(|i| Bytes::from(format!("x{{asset=\"mail{i}.example\"}} {i}\n").repeat(i + 1)))
            .collect();
        // Packed first and last, alone and in a row, between runs of plain pieces.
        let packed = |i: usize| matches!(i % 7, 0 | 3 | 4) || i == 59;
        let head: Vec<Piece> = lines
            .iter()
            .enumerate()
            .map(|(i, lines)| match packed(i) {
                true => Piece::Packed(Packed::new(lines)),
                false => Piece::Plain(lines.clone()),
            })
            .collect();
        let prefix = GzipPrefix::new(&head);
        let body = prefix.finish(b"up 1\n# EOF\n");
        let mut expected = lines.concat();
        expected.extend_from_slice(b"up 1\n# EOF\n");
        assert_eq!(gunzip(&body), expected);
        // The packed pieces' bytes are shared, not copied.
        let Piece::Packed(first) = &head[0] else {
            unreachable!()
        };
        assert_eq!(body[1].as_ptr(), first.deflated().as_ptr());
    }

    #[test]
    fn an_empty_head_still_makes_a_valid_member() {
        let prefix = GzipPrefix::new(&[]);
        assert_eq!(gunzip(&prefix.finish(b"x 1\n")), b"x 1\n");
    }
}
