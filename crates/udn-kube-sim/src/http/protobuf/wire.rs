//! The protobuf wire format: reading `(field number, payload)` pairs and writing fields.

use super::Malformed;

/// A field's payload by wire type.
#[derive(Clone, Copy, Debug)]
pub(super) enum Wire<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32,
    Bytes(&'a [u8]),
}

/// Iterates the `(field number, payload)` pairs of one message.
#[derive(Debug)]
pub(super) struct Reader<'a>(pub(super) &'a [u8]);

impl<'a> Reader<'a> {
    pub(super) fn varint(&mut self) -> Result<u64, Malformed> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = self
                .0
                .split_first()
                .ok_or_else(|| Malformed::new("truncated varint"))?;
            self.0 = rest;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(Malformed::new("varint too long"))
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8], Malformed> {
        if len > self.0.len() {
            return Err(Malformed::new("truncated field"));
        }
        let (head, rest) = self.0.split_at(len);
        self.0 = rest;
        Ok(head)
    }

    fn fixed<const N: usize>(&mut self) -> Result<[u8; N], Malformed> {
        let bytes = self.take(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    fn field(&mut self) -> Result<(u64, Wire<'a>), Malformed> {
        let tag = self.varint()?;
        let wire = match tag & 7 {
            0 => Wire::Varint(self.varint()?),
            1 => Wire::Fixed64(u64::from_le_bytes(self.fixed()?)),
            2 => {
                let len = usize::try_from(self.varint()?)
                    .map_err(|_| Malformed::new("length overflows"))?;
                Wire::Bytes(self.take(len)?)
            }
            5 => self.fixed::<4>().map(|_| Wire::Fixed32)?,
            _ => return Err(Malformed::new("unsupported wire type")),
        };
        if tag >> 3 == 0 {
            return Err(Malformed::new("field number 0"));
        }
        Ok((tag >> 3, wire))
    }
}

impl<'a> Iterator for Reader<'a> {
    type Item = Result<(u64, Wire<'a>), Malformed>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        let item = self.field();
        if item.is_err() {
            self.0 = &[];
        }
        Some(item)
    }
}

/// Appends `value` as a varint.
pub(super) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// A varint field.
pub(super) fn put_varint_field(out: &mut Vec<u8>, number: u32, value: u64) {
    put_varint(out, u64::from(number) << 3);
    put_varint(out, value);
}

/// A length-delimited field.
pub(super) fn put_bytes_field(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_varint(out, (u64::from(number) << 3) | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A 64-bit fixed field (`double`).
pub(super) fn put_fixed64_field(out: &mut Vec<u8>, number: u32, value: u64) {
    put_varint(out, (u64::from(number) << 3) | 1);
    out.extend_from_slice(&value.to_le_bytes());
}
