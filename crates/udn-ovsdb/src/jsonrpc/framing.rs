//! Incremental splitting of a byte stream into complete top-level JSON texts.
//!
//! OVSDB sends JSON-RPC messages back to back with no length prefix; a message ends where its
//! outermost object or array closes. The splitter tracks nesting depth and string/escape state so
//! that braces inside strings (including after escaped quotes and backslashes) do not count.

/// Errors splitting the stream. After an error the splitter has discarded its partial state; the
/// connection should be closed, since message boundaries can no longer be trusted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FramingError {
    /// A message grew past the configured limit before it completed.
    #[error("JSON message exceeds the maximum size of {max} bytes")]
    TooLarge {
        /// The configured limit in bytes.
        max: usize,
    },
    /// A byte outside any message that is neither whitespace nor the start of an object or array.
    #[error(
        "unexpected byte 0x{byte:02x} between JSON messages: messages must be objects or arrays"
    )]
    UnexpectedByte {
        /// The offending byte.
        byte: u8,
    },
}

/// Capacity of the buffer for split messages kept after use; a larger one is freed.
const KEEP_BUFFER_BYTES: usize = 1 << 20;

/// Splits arbitrary byte chunks into complete top-level JSON texts (objects or arrays).
///
/// Messages that lie whole within a chunk are handed out as slices of it; only the bytes of a
/// message split across chunks are copied (once). Strings are skipped with a vectorized search
/// for the next quote or backslash.
#[derive(Debug, Clone)]
pub struct JsonSplitter {
    max_message: usize,
    /// The unfinished message's bytes so far, or the last message handed out from it.
    current: Vec<u8>,
    /// `current` holds a finished message already handed out: clear it before going on.
    handed_out: bool,
    depth: usize,
    in_string: bool,
    escaped: bool,
}

impl JsonSplitter {
    /// A splitter rejecting messages longer than `max_message` bytes.
    pub fn new(max_message: usize) -> Self {
        Self {
            max_message,
            current: Vec::new(),
            handed_out: false,
            depth: 0,
            in_string: false,
            escaped: false,
        }
    }

    /// Whether a message is partially buffered.
    pub fn has_partial(&self) -> bool {
        !self.handed_out && !self.current.is_empty()
    }

    fn reset(&mut self) {
        self.current.clear();
        self.handed_out = false;
        self.depth = 0;
        self.in_string = false;
        self.escaped = false;
    }

    /// Feeds a chunk; returns every message completed by it, in order. Bytes of an unfinished
    /// message stay buffered for the next call. (Copies each message: [`JsonSplitter::frames`]
    /// does not.)
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<Vec<u8>>, FramingError> {
        let mut done = Vec::new();
        let mut frames = self.frames(chunk);
        while let Some(message) = frames.next_message() {
            done.push(message?.to_vec());
        }
        Ok(done)
    }

    /// Feeds a chunk and walks the messages it completes with [`Frames::next_message`].
    pub fn frames<'a>(&'a mut self, chunk: &'a [u8]) -> Frames<'a> {
        Frames {
            splitter: self,
            chunk,
        }
    }

    /// Forgets the partial state after an error and returns the error.
    fn fail(&mut self, error: FramingError) -> FramingError {
        self.reset();
        error
    }

    fn too_large(&mut self) -> FramingError {
        let max = self.max_message;
        self.fail(FramingError::TooLarge { max })
    }

    /// Scans `bytes`, the continuation of a message, updating the nesting and string state.
    /// Returns the length of the prefix that completes the message, if it does.
    fn scan(&mut self, bytes: &[u8]) -> Option<usize> {
        let mut at = 0;
        while let Some(rest) = bytes.get(at..).filter(|rest| !rest.is_empty()) {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                    at += 1;
                    continue;
                }
                let offset = memchr::memchr2(b'"', b'\\', rest)?;
                at += offset + 1;
                match rest.get(offset) {
                    Some(b'"') => self.in_string = false,
                    _ => self.escaped = true,
                }
                continue;
            }
            for &byte in rest {
                at += 1;
                match byte {
                    b'"' => {
                        self.in_string = true;
                        break;
                    }
                    b'{' | b'[' => self.depth += 1,
                    b'}' | b']' => {
                        self.depth = self.depth.saturating_sub(1);
                        if self.depth == 0 {
                            return Some(at);
                        }
                    }
                    _ => {}
                }
            }
        }
        None
    }
}

/// The messages one chunk completes: a lending iterator over [`JsonSplitter::frames`]' chunk.
#[derive(Debug)]
pub struct Frames<'a> {
    splitter: &'a mut JsonSplitter,
    /// The part of the chunk not scanned yet.
    chunk: &'a [u8],
}

impl Frames<'_> {
    /// The next complete message, borrowed until the next call; `None` when the chunk is used
    /// up (an unfinished message stays buffered in the splitter). After an error the rest of
    /// the chunk is dropped and the splitter starts afresh.
    pub fn next_message(&mut self) -> Option<Result<&[u8], FramingError>> {
        let splitter = &mut *self.splitter;
        if splitter.handed_out {
            splitter.handed_out = false;
            if splitter.current.capacity() > KEEP_BUFFER_BYTES {
                // A big message (an initial monitor reply): give its memory back.
                splitter.current = Vec::new();
            } else {
                splitter.current.clear();
            }
        }
        if splitter.depth == 0 {
            // Between messages: whitespace, then the start of the next one.
            let start = self
                .chunk
                .iter()
                .position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))?;
            self.chunk = self.chunk.get(start..).unwrap_or_default();
            if let Some(&byte) = self.chunk.first().filter(|b| !matches!(b, b'{' | b'[')) {
                self.chunk = &[];
                return Some(Err(splitter.fail(FramingError::UnexpectedByte { byte })));
            }
        }
        let chunk = self.chunk;
        let Some(end) = splitter.scan(chunk) else {
            if splitter.current.len() + chunk.len() > splitter.max_message {
                self.chunk = &[];
                return Some(Err(splitter.too_large()));
            }
            splitter.current.extend_from_slice(chunk);
            self.chunk = &[];
            return None;
        };
        let (message, rest) = chunk.split_at(end);
        if splitter.current.len() + message.len() > splitter.max_message {
            self.chunk = &[];
            return Some(Err(splitter.too_large()));
        }
        self.chunk = rest;
        if splitter.current.is_empty() {
            return Some(Ok(message));
        }
        splitter.current.extend_from_slice(message);
        splitter.handed_out = true;
        Some(Ok(&splitter.current))
    }
}
