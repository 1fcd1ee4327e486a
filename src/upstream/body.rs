//! Reading an answer's body into a [`BodyDecoder`] as it arrives: on the async worker for the
//! small answers, on a blocking thread for a list, which is rendered while it is decoded.

use bytes::{Bytes, BytesMut};

use super::{Client, FetchError};
use crate::upstream::dto::DecodeError;

/// A body decoded as its bytes arrive.
pub trait BodyDecoder: Send + 'static {
    /// What the body decodes to.
    type Output: Send + 'static;
    /// Whether the decoding is heavy work that must leave the async workers (a list of a
    /// million assets takes seconds): the body is then handed to a blocking thread in batches,
    /// the next read while one is decoded.
    const HEAVY: bool = false;
    /// The length the answer announces, before the first bytes.
    fn expect(&mut self, _length: u64) {}
    /// The next bytes; an error stops the reading and fails the request as `decode`.
    fn feed(&mut self, chunk: &[u8]) -> Result<(), DecodeError>;
    /// The body has ended.
    fn finish(self) -> Result<Self::Output, DecodeError>;
}

/// Most bytes of body read ahead of a [heavy](BodyDecoder::HEAVY) decoder: at most two
/// batches are held, one being decoded and one being read.
pub const BATCH: usize = 1 << 20;

/// A body collected whole, then decoded at once: the small answers (a report, the user, the
/// system status).
pub(super) struct Whole<F> {
    pub(super) body: BytesMut,
    pub(super) limit: u64,
    pub(super) decode: F,
}

impl<T, F> BodyDecoder for Whole<F>
where
    T: Send + 'static,
    F: FnOnce(&[u8]) -> Result<T, DecodeError> + Send + 'static,
{
    type Output = T;

    fn expect(&mut self, length: u64) {
        self.body
            .reserve(usize::try_from(length.min(self.limit)).unwrap_or(0));
    }

    fn feed(&mut self, chunk: &[u8]) -> Result<(), DecodeError> {
        self.body.extend_from_slice(chunk);
        Ok(())
    }

    fn finish(self) -> Result<T, DecodeError> {
        (self.decode)(&self.body)
    }
}

/// An answer's body as it arrives, bounded by `api.max_body_bytes`.
pub(super) struct Body<'c> {
    pub(super) client: &'c Client,
    pub(super) response: reqwest::Response,
    pub(super) read: u64,
}

/// What reading a body gives: the decoded value or why the body could not be decoded, or why
/// there was no usable answer.
pub(super) type Read<T> = Result<Result<T, DecodeError>, FetchError>;

impl Body<'_> {
    /// The next bytes, `None` at the end.
    async fn next(&mut self) -> Result<Option<Bytes>, FetchError> {
        let chunk = self
            .response
            .chunk()
            .await
            .map_err(|e| self.client.transport_error(e))?;
        if let Some(chunk) = &chunk {
            self.read += chunk.len() as u64;
            if self.read > self.client.max_body_bytes {
                return Err(FetchError::TooLarge(self.client.max_body_bytes));
            }
        }
        Ok(chunk)
    }

    /// Feeds the whole body to `decoder`, where its [`BodyDecoder::HEAVY`] says.
    pub(super) async fn decode<D: BodyDecoder>(mut self, mut decoder: D) -> Read<D::Output> {
        if D::HEAVY {
            return self.decode_off_thread(decoder).await;
        }
        while let Some(chunk) = self.next().await? {
            if let Err(e) = decoder.feed(&chunk) {
                return Ok(Err(e));
            }
        }
        Ok(decoder.finish())
    }

    /// Feeds the body to `decoder` on a blocking thread: the bytes read while it decodes are
    /// its next batch (at most [`BATCH`]; reading waits beyond), so it never waits for bytes
    /// that have arrived, and the body is never held.
    async fn decode_off_thread<D: BodyDecoder>(mut self, decoder: D) -> Read<D::Output> {
        let feed = |mut decoder: D, batch: Vec<Bytes>| {
            let fed = batch.iter().try_for_each(|chunk| decoder.feed(chunk));
            (decoder, fed)
        };
        let mut idle = Some(decoder);
        let mut decoding = None;
        let (mut batch, mut size, mut ended) = (Vec::new(), 0, false);
        loop {
            if let Some(decoder) = idle.take() {
                if ended {
                    let finish = move || match feed(decoder, batch) {
                        (decoder, Ok(())) => decoder.finish(),
                        (_, Err(e)) => Err(e),
                    };
                    return joined(exporter_web::task::spawn_blocking(finish).await);
                }
                if batch.is_empty() {
                    idle = Some(decoder);
                } else {
                    let batch = std::mem::take(&mut batch);
                    size = 0;
                    decoding = Some(exporter_web::task::spawn_blocking(move || {
                        feed(decoder, batch)
                    }));
                }
            }
            tokio::select! {
                done = async { decoding.as_mut().expect("decoding").await }, if decoding.is_some() => {
                    decoding = None;
                    let (decoder, fed) = joined(done)?;
                    if let Err(e) = fed {
                        return Ok(Err(e));
                    }
                    idle = Some(decoder);
                }
                chunk = self.next(), if !ended && size < BATCH => match chunk? {
                    Some(chunk) => {
                        size += chunk.len();
                        batch.push(chunk);
                    }
                    None => ended = true,
                },
            }
        }
    }
}

/// A blocking task's result; its panic goes on unwinding here.
fn joined<T>(result: Result<T, tokio::task::JoinError>) -> Result<T, FetchError> {
    match result {
        Ok(value) => Ok(value),
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // Only a runtime shutting down cancels a blocking task.
        Err(_) => Err(FetchError::Decode(DecodeError {
            path: "$".into(),
            message: "decoding was cancelled: the exporter is stopping".into(),
        })),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::thread::ThreadId;
    use std::time::Duration;

    use super::*;
    use crate::health::Health;
    use crate::telemetry::Telemetry;
    use crate::upstream::ClientOptions;
    use crate::upstream::retry::RetryPolicy;
    use crate::vocabulary::{Endpoint, Kind};

    /// A heavy decoder that records what it was fed and where.
    #[derive(Default)]
    struct Recorder {
        bytes: Vec<u8>,
        threads: Vec<ThreadId>,
        fail_at: Option<usize>,
    }

    impl BodyDecoder for Recorder {
        type Output = (Vec<u8>, Vec<ThreadId>);
        const HEAVY: bool = true;

        fn feed(&mut self, chunk: &[u8]) -> Result<(), DecodeError> {
            self.threads.push(std::thread::current().id());
            self.bytes.extend_from_slice(chunk);
            match self.fail_at {
                Some(at) if self.bytes.len() >= at => Err(DecodeError {
                    path: "$".into(),
                    message: "enough".into(),
                }),
                _ => Ok(()),
            }
        }

        fn finish(self) -> Result<Self::Output, DecodeError> {
            Ok((self.bytes, self.threads))
        }
    }

    /// A client of a server on 127.0.0.1 whose ip-list is `body`, sent in 64 KiB chunks.
    async fn client_of(body: Vec<u8>) -> Client {
        let chunks: Vec<Result<Bytes, std::convert::Infallible>> = body
            .chunks(64 << 10)
            .map(|chunk| Ok(Bytes::copy_from_slice(chunk)))
            .collect();
        let route = axum::routing::get(move || {
            let chunks = chunks.clone();
            async move { axum::body::Body::from_stream(futures_util::stream::iter(chunks)) }
        });
        let app = axum::Router::new().route(Endpoint::list(Kind::Ip).path(), route);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let health = Arc::new(Health::new(&Endpoint::POLLED));
        let options = ClientOptions {
            base_url: format!("http://{address}").parse().unwrap(),
            token: crate::vocabulary::Secret::new("t"),
            token_file: None,
            timeout: Duration::from_secs(30),
            max_body_bytes: 1 << 30,
            retry: RetryPolicy {
                initial_delay: Duration::from_millis(10),
                max_delay: Duration::from_millis(10),
                max_elapsed: Duration::ZERO,
                retry_unreachable: true,
            },
            section: "api".into(),
            in_process: None,
        };
        Client::new(options, Arc::new(Telemetry::new(health.clone())), health).unwrap()
    }

    async fn fetch(
        client: &Client,
        fail_at: Option<usize>,
    ) -> Result<(Vec<u8>, Vec<ThreadId>), FetchError> {
        let endpoint = Endpoint::list(Kind::Ip);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        let recorder = || Recorder {
            fail_at,
            ..Recorder::default()
        };
        client
            .call_streaming(endpoint, endpoint.path(), deadline, recorder, |_, _| {})
            .await
    }

    #[tokio::test]
    async fn a_heavy_decoder_gets_the_whole_body_in_order_off_the_async_thread() {
        let body: Vec<u8> = (0..5_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let client = client_of(body.clone()).await;
        let (fed, threads) = fetch(&client, None).await.unwrap();
        assert!(fed == body, "every byte, in order");
        let here = std::thread::current().id();
        assert!(!threads.is_empty());
        assert!(
            threads.iter().all(|thread| *thread != here),
            "never on the runtime's thread"
        );
    }

    #[tokio::test]
    async fn a_heavy_decoders_error_ends_the_reading() {
        let client = client_of(vec![b' '; 5_000_000]).await;
        let error = fetch(&client, Some(100_000)).await.unwrap_err();
        assert!(
            matches!(&error, FetchError::Decode(e) if e.message == "enough"),
            "{error}"
        );
    }
}
