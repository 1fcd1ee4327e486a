//! A response body made of shared pieces: the cached per-asset body is sent without copying,
//! packed pieces inflated one at a time as the connection takes them.

use std::collections::VecDeque;

use bytes::Bytes;

use crate::exposition::piece::Piece;

/// A response body made of shared pieces, with its exact length known up front (so the
/// response carries `Content-Length`, and plain pieces are written without copying).
pub(super) struct Chunks {
    chunks: VecDeque<Piece>,
    remaining: u64,
}

impl Chunks {
    pub(super) fn new(chunks: Vec<Piece>) -> Self {
        let remaining = chunks.iter().map(|c| c.len() as u64).sum();
        Chunks {
            chunks: chunks.into_iter().filter(|c| !c.is_empty()).collect(),
            remaining,
        }
    }
}

impl http_body::Body for Chunks {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        let next = self.chunks.pop_front();
        if let Some(chunk) = &next {
            self.remaining -= chunk.len() as u64;
        }
        std::task::Poll::Ready(next.map(|c| Ok(http_body::Frame::data(c.lines()))))
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.remaining)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exposition::piece::Packed;

    #[tokio::test]
    async fn packed_pieces_are_sent_as_their_lines_within_the_announced_length() {
        let lines = [
            "a 1\n".repeat(5_000),
            "b 2\n".into(),
            "c 3\n".repeat(70_000),
        ];
        let pieces = vec![
            Piece::Packed(Packed::new(lines[0].as_bytes())),
            Piece::Plain(Bytes::from(lines[1].clone())),
            Piece::Plain(Bytes::new()),
            Piece::Packed(Packed::new(lines[2].as_bytes())),
        ];
        let body = Chunks::new(pieces);
        let expected = lines.concat();
        assert_eq!(
            http_body::Body::size_hint(&body).exact(),
            Some(expected.len() as u64)
        );
        let sent = axum::body::to_bytes(axum::body::Body::new(body), usize::MAX)
            .await
            .unwrap();
        assert_eq!(sent, expected.as_bytes());
    }
}
