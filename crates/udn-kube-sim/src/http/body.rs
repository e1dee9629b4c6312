//! [`ResponseBody`]: the body of every response, either one buffer or a stream of chunks
//! (watch).

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::Stream;
use futures::stream::BoxStream;
use http_body::{Body, Frame, SizeHint};

/// The body of a response of [`super::SimService`]: a complete buffer, or (for watches) a
/// stream of chunks that ends when the watch ends. Over HTTP/1.1 the stream is sent with
/// chunked transfer encoding.
pub struct ResponseBody {
    kind: Kind,
}

enum Kind {
    Full(Option<Bytes>),
    Stream(BoxStream<'static, Bytes>),
}

impl ResponseBody {
    /// A body of exactly these bytes.
    pub fn full(bytes: impl Into<Bytes>) -> Self {
        let bytes = bytes.into();
        Self {
            kind: Kind::Full((!bytes.is_empty()).then_some(bytes)),
        }
    }

    /// A body streamed chunk by chunk.
    pub fn stream(chunks: BoxStream<'static, Bytes>) -> Self {
        Self {
            kind: Kind::Stream(chunks),
        }
    }
}

impl std::fmt::Debug for ResponseBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            Kind::Full(bytes) => f
                .debug_struct("ResponseBody::Full")
                .field("len", &bytes.as_ref().map_or(0, Bytes::len))
                .finish(),
            Kind::Stream(_) => f.write_str("ResponseBody::Stream"),
        }
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.get_mut().kind {
            Kind::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Kind::Stream(stream) => Pin::new(stream)
                .poll_next(cx)
                .map(|chunk| chunk.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.kind, Kind::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Full(bytes) => SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64)),
            Kind::Stream(_) => SizeHint::default(),
        }
    }
}
