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

/// Splits arbitrary byte chunks into complete top-level JSON texts (objects or arrays).
#[derive(Debug, Clone)]
pub struct JsonSplitter {
    max_message: usize,
    current: Vec<u8>,
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
            depth: 0,
            in_string: false,
            escaped: false,
        }
    }

    /// Whether a message is partially buffered.
    pub fn has_partial(&self) -> bool {
        !self.current.is_empty()
    }

    fn reset(&mut self) {
        self.current.clear();
        self.depth = 0;
        self.in_string = false;
        self.escaped = false;
    }

    /// Feeds a chunk; returns every message completed by it, in order. Bytes of an unfinished
    /// message stay buffered for the next call.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<Vec<u8>>, FramingError> {
        let mut done = Vec::new();
        for &byte in chunk {
            if self.depth == 0 {
                match byte {
                    b' ' | b'\t' | b'\n' | b'\r' => continue,
                    b'{' | b'[' => {}
                    _ => {
                        self.reset();
                        return Err(FramingError::UnexpectedByte { byte });
                    }
                }
            }
            if self.current.len() >= self.max_message {
                self.reset();
                return Err(FramingError::TooLarge {
                    max: self.max_message,
                });
            }
            self.current.push(byte);
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if byte == b'\\' {
                    self.escaped = true;
                } else if byte == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            match byte {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        done.push(std::mem::take(&mut self.current));
                    }
                }
                _ => {}
            }
        }
        Ok(done)
    }
}
