//! A JSON array cut into its elements as its bytes arrive, so that a list of a million items is
//! never held whole: only the element being read is buffered (and not even that when it lies
//! within one chunk). Each element's own syntax is checked by whoever takes it; this only finds
//! where elements begin and end (brackets and braces outside strings, commas at the top).

use super::dto::DecodeError;

/// Where the reader stands in the array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Before the opening `[`.
    Start,
    /// After `[` or a comma: an element (or, after `[`, the closing `]`) comes next.
    Element { first: bool },
    /// Inside an element.
    InElement,
    /// After the closing `]`: only white space may follow.
    End,
}

/// Cuts a JSON array into its elements.
#[derive(Debug)]
pub(super) struct ArraySplitter {
    at: At,
    /// Nesting inside the current element.
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// The part of the current element from earlier chunks.
    partial: Vec<u8>,
    /// Elements completed so far.
    index: usize,
}

impl Default for ArraySplitter {
    fn default() -> Self {
        ArraySplitter {
            at: At::Start,
            depth: 0,
            in_string: false,
            escaped: false,
            partial: Vec::new(),
            index: 0,
        }
    }
}

/// The bytes that open or close something, or separate elements.
fn is_structural(byte: u8) -> bool {
    matches!(byte, b'"' | b'{' | b'}' | b'[' | b']' | b',')
}

fn is_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

impl ArraySplitter {
    /// Reads the next bytes of the body, handing each element completed in them to `element`
    /// with its index, its bytes without surrounding white space. An error of the array itself
    /// (not an array, an empty element, something after its end) stops the reading.
    pub(super) fn feed(
        &mut self,
        chunk: &[u8],
        element: &mut impl FnMut(usize, &[u8]) -> Result<(), DecodeError>,
    ) -> Result<(), DecodeError> {
        let mut i = 0;
        // Where the current element starts in this chunk, while it is read.
        let mut start = (self.at == At::InElement).then_some(0);
        while i < chunk.len() {
            let byte = chunk[i];
            match self.at {
                At::Start => {
                    if byte == b'[' {
                        self.at = At::Element { first: true };
                    } else if !is_space(byte) {
                        return Err(error(
                            "$",
                            format!(
                                "expected a JSON array of list items, found `{}`",
                                shown(&chunk[i..])
                            ),
                        ));
                    }
                }
                At::Element { first } => {
                    if byte == b']' && first {
                        self.at = At::End;
                    } else if byte == b',' || byte == b']' {
                        return Err(error(
                            &format!("$[{}]", self.index),
                            "expected a value before `,` or `]`".to_owned(),
                        ));
                    } else if !is_space(byte) {
                        self.at = At::InElement;
                        start = Some(i);
                        // Read this byte again as the element's first.
                        continue;
                    }
                }
                At::InElement => {
                    if self.in_string {
                        if self.escaped {
                            self.escaped = false;
                        } else if byte == b'\\' {
                            self.escaped = true;
                        } else if byte == b'"' {
                            self.in_string = false;
                        } else if let Some(skip) = memchr_quote_or_backslash(&chunk[i + 1..]) {
                            // Plain string bytes: skip them in one step.
                            i += 1 + skip;
                            continue;
                        } else {
                            i = chunk.len();
                            continue;
                        }
                    } else {
                        match byte {
                            b'"' => self.in_string = true,
                            // Numbers, literals, white space, `:`: skip to the next byte that
                            // matters in one step.
                            byte if !is_structural(byte) => {
                                match chunk[i + 1..].iter().position(|b| is_structural(*b)) {
                                    Some(skip) => i += 1 + skip,
                                    None => i = chunk.len(),
                                }
                                continue;
                            }
                            b'{' | b'[' => self.depth += 1,
                            b'}' | b']' if self.depth > 0 => self.depth -= 1,
                            b',' | b']' if self.depth == 0 => {
                                let from = start.take().unwrap_or(0);
                                self.complete(&chunk[from..i], element)?;
                                self.at = if byte == b',' {
                                    At::Element { first: false }
                                } else {
                                    At::End
                                };
                            }
                            _ => {}
                        }
                    }
                }
                At::End => {
                    if !is_space(byte) {
                        return Err(error(
                            "$",
                            format!(
                                "trailing characters after the list: `{}`",
                                shown(&chunk[i..])
                            ),
                        ));
                    }
                }
            }
            i += 1;
        }
        if let (At::InElement, Some(from)) = (self.at, start) {
            self.partial.extend_from_slice(&chunk[from..]);
        }
        Ok(())
    }

    /// The body has ended: an error unless the array was closed.
    pub(super) fn finish(&self) -> Result<(), DecodeError> {
        match self.at {
            At::End => Ok(()),
            At::Start => Err(error(
                "$",
                "EOF while parsing: the body is empty".to_owned(),
            )),
            _ => Err(error(
                "$",
                format!(
                    "EOF while parsing the list: the body ends after {} items, before the \
                     closing `]` (cut short?)",
                    self.index
                ),
            )),
        }
    }

    /// Hands over the element that ends with `tail` (after what earlier chunks held of it).
    fn complete(
        &mut self,
        tail: &[u8],
        element: &mut impl FnMut(usize, &[u8]) -> Result<(), DecodeError>,
    ) -> Result<(), DecodeError> {
        let index = self.index;
        self.index += 1;
        let result = if self.partial.is_empty() {
            element(index, trim_end(tail))
        } else {
            self.partial.extend_from_slice(tail);
            let result = element(index, trim_end(&self.partial));
            self.partial.clear();
            result
        };
        self.depth = 0;
        result
    }
}

fn trim_end(bytes: &[u8]) -> &[u8] {
    let end = bytes
        .iter()
        .rposition(|b| !is_space(*b))
        .map_or(0, |p| p + 1);
    &bytes[..end]
}

/// Position of the next `"` or `\` in `bytes`.
fn memchr_quote_or_backslash(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|b| *b == b'"' || *b == b'\\')
}

fn error(path: &str, message: String) -> DecodeError {
    DecodeError {
        path: path.to_owned(),
        message,
    }
}

/// The first characters of what was found, for a message.
fn shown(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(40)]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The elements of `body` fed in chunks of `size` bytes, or the error.
    fn split(body: &[u8], size: usize) -> Result<Vec<String>, DecodeError> {
        let mut splitter = ArraySplitter::default();
        let mut found = Vec::new();
        let mut take = |index: usize, bytes: &[u8]| {
            assert_eq!(index, found.len());
            found.push(String::from_utf8(bytes.to_vec()).unwrap());
            Ok(())
        };
        for chunk in body.chunks(size.max(1)) {
            splitter.feed(chunk, &mut take)?;
        }
        splitter.finish()?;
        Ok(found)
    }

    #[test]
    fn elements_come_whole_whatever_the_chunks() {
        let body = br#" [ {"ip": "a,]}\"[", "n": [1, {"x": "]"}]} , 2,"s\\",null ,[ ],{}]
 "#;
        let expected = [
            r#"{"ip": "a,]}\"[", "n": [1, {"x": "]"}]}"#,
            "2",
            r#""s\\""#,
            "null",
            "[ ]",
            "{}",
        ];
        for size in 1..=body.len() {
            assert_eq!(split(body, size).unwrap(), expected, "chunks of {size}");
        }
        assert_eq!(split(b"[]", 1).unwrap(), Vec::<String>::new());
        assert_eq!(split(b" [ \n ] ", 3).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn what_is_no_array_fails_the_whole_list() {
        let failure = |body: &[u8]| split(body, 7).unwrap_err();
        let e = failure(br#"{"error": "nope"}"#);
        assert_eq!(e.path, "$");
        assert!(e.message.starts_with("expected a JSON array"), "{e}");
        let e = failure(br#"[{"ip": "a"}"#);
        assert!(
            e.message.contains("EOF") && e.message.contains("after 0 items"),
            "{e}"
        );
        let e = failure(br#"[1, 2"#);
        assert!(e.message.contains("after 1 items"), "{e}");
        assert_eq!(failure(b"[1,,2]").path, "$[1]");
        assert_eq!(failure(b"[1,]").path, "$[1]");
        assert_eq!(failure(b"[,1]").path, "$[0]");
        assert!(failure(b"[1] x").message.starts_with("trailing characters"));
        assert!(failure(b"").message.contains("EOF"));
    }

    #[test]
    fn an_element_split_across_chunks_is_buffered_only_while_it_is_read() {
        let mut splitter = ArraySplitter::default();
        let mut found = Vec::new();
        let mut take = |_: usize, bytes: &[u8]| {
            found.push(bytes.len());
            Ok(())
        };
        splitter.feed(br#"[{"a": ""#, &mut take).unwrap();
        assert_eq!(splitter.partial.len(), 7);
        splitter.feed(br#"xyz"}, 1]"#, &mut take).unwrap();
        assert!(splitter.partial.is_empty());
        splitter.finish().unwrap();
        assert_eq!(found, [12, 1]);
    }
}
