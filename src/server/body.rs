//! A response body made of shared chunks: the cached per-asset body is sent without copying.

use std::collections::VecDeque;

use bytes::Bytes;

/// A response body made of shared chunks, with its exact length known up front (so the
/// response carries `Content-Length`, and the chunks are written without copying).
pub(super) struct Chunks {
    chunks: VecDeque<Bytes>,
    remaining: u64,
}

impl Chunks {
    pub(super) fn new(chunks: Vec<Bytes>) -> Self {
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
        std::task::Poll::Ready(next.map(|c| Ok(http_body::Frame::data(c))))
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.remaining)
    }
}
