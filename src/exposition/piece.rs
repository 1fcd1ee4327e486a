//! The pieces a rendered body is made of: sample lines kept as they are, or packed.
//!
//! A list too large to be kept twice (the snapshot served, and the next poll's list rendered
//! beside it) is kept packed: each closed chunk of its lines as raw deflate ending in a sync
//! flush, with the CRC-32 and length of its lines. Packed pieces go into a gzip body as they
//! are ([`GzipPrefix`](super::gzip::GzipPrefix) joins them with the compressed runs of plain
//! pieces into one deflate stream), and are inflated, one at a time, only for a scrape that
//! does not accept gzip.

use std::io::Write as _;

use bytes::Bytes;
use flate2::write::DeflateEncoder;
use flate2::{Compression, Decompress, FlushDecompress};

/// Compression level of packed pieces and of a gzip body's plain runs: the fastest; a scrape
/// body is compressed for the network, not for storage.
pub const LEVEL: u32 = 1;

/// A piece of a rendered body.
#[derive(Debug, Clone)]
pub enum Piece {
    /// Lines as they are served.
    Plain(Bytes),
    /// Lines packed.
    Packed(Packed),
}

/// Lines as raw deflate that ends with a sync flush (on a byte boundary, no final block), so
/// that packed pieces can follow one another in one deflate stream.
#[derive(Debug, Clone)]
pub struct Packed {
    deflated: Bytes,
    crc: u32,
    len: usize,
}

impl From<Bytes> for Piece {
    fn from(bytes: Bytes) -> Self {
        Piece::Plain(bytes)
    }
}

impl Piece {
    /// Length of its lines.
    pub fn len(&self) -> usize {
        match self {
            Piece::Plain(bytes) => bytes.len(),
            Piece::Packed(packed) => packed.len,
        }
    }

    /// Whether it holds no lines.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its lines: shared when plain, inflated when packed.
    pub fn lines(&self) -> Bytes {
        match self {
            Piece::Plain(bytes) => bytes.clone(),
            Piece::Packed(packed) => packed.unpack(),
        }
    }

    /// Bytes held for it.
    pub fn held(&self) -> usize {
        match self {
            Piece::Plain(bytes) => bytes.len(),
            Piece::Packed(packed) => packed.deflated.len(),
        }
    }
}

impl Packed {
    /// Packs these lines.
    pub fn new(lines: &[u8]) -> Packed {
        let mut encoder = DeflateEncoder::new(
            Vec::with_capacity(lines.len() / 4 + 64),
            Compression::new(LEVEL),
        );
        // Writing into a Vec cannot fail.
        let _ = encoder.write_all(lines);
        let _ = encoder.flush();
        let mut deflated = std::mem::take(encoder.get_mut());
        deflated.shrink_to_fit();
        Packed {
            deflated: Bytes::from(deflated),
            crc: crc32fast::hash(lines),
            len: lines.len(),
        }
    }

    /// The raw deflate bytes, to be placed in a deflate stream on a byte boundary.
    pub fn deflated(&self) -> &Bytes {
        &self.deflated
    }

    /// The CRC-32 of its lines, to be combined into a gzip trailer's.
    pub fn crc(&self) -> crc32fast::Hasher {
        crc32fast::Hasher::new_with_initial_len(self.crc, self.len as u64)
    }

    /// The lines again.
    pub fn unpack(&self) -> Bytes {
        let mut lines = Vec::with_capacity(self.len);
        let mut inflater = Decompress::new(false);
        let inflated = inflater.decompress_vec(&self.deflated, &mut lines, FlushDecompress::Sync);
        // The bytes were deflated here from `len` bytes of lines: anything else is a bug.
        assert!(
            inflated.is_ok() && lines.len() == self.len,
            "a packed piece inflates to its own lines"
        );
        Bytes::from(lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packed_piece_is_smaller_and_gives_its_lines_back() {
        let lines: String = (0..20_000)
            .map(|i| {
                format!(
                    "reputation_senderscore{{kind=\"ip\",asset=\"10.0.{}.{}\"}} {}\n",
                    i / 256,
                    i % 256,
                    i % 100
                )
            })
            .collect();
        let piece = Piece::Packed(Packed::new(lines.as_bytes()));
        assert_eq!(piece.len(), lines.len());
        assert!(
            piece.held() * 4 < lines.len(),
            "{} of {}",
            piece.held(),
            lines.len()
        );
        assert_eq!(piece.lines(), lines.as_bytes());
        let mut crc = crc32fast::Hasher::new();
        crc.update(lines.as_bytes());
        let Piece::Packed(packed) = &piece else {
            unreachable!()
        };
        assert_eq!(packed.crc().finalize(), crc.finalize());
        let empty = Packed::new(b"");
        assert_eq!(empty.unpack(), &b""[..]);
    }
}
