//! The shape of the generated field tables: one [`Message`] per Go API struct, one
//! [`Field`] per struct field with a protobuf tag.

/// One protobuf message (a Go API struct).
#[derive(Debug)]
pub(crate) struct Message {
    /// The full protobuf name (`k8s.io.api.core.v1.Pod`).
    pub(crate) name: &'static str,
    /// The fields, by field number.
    pub(crate) fields: &'static [Field],
}

impl Message {
    pub(crate) fn field(&self, number: u64) -> Option<&'static Field> {
        self.fields.iter().find(|f| u64::from(f.number) == number)
    }
}

/// One field of a message and its JSON member.
#[derive(Debug)]
pub(crate) struct Field {
    /// The protobuf field number.
    pub(crate) number: u32,
    /// The protobuf field name (`generated.proto`).
    pub(crate) proto: &'static str,
    /// The JSON member; empty for an inlined struct.
    pub(crate) json: &'static str,
    /// The value type (of the elements, for lists and maps).
    pub(crate) kind: Kind,
    /// Single value, inlined struct, list or map.
    pub(crate) shape: Shape,
}

/// How a field holds its values.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Shape {
    /// One value. A Go pointer (`pointer`) keeps a zero value on the wire as a value; a
    /// zero value of a non-pointer is dropped when the JSON tag has `omitempty`, as Go's
    /// JSON encoder drops it.
    Single { pointer: bool, omitempty: bool },
    /// An embedded struct whose fields sit in the parent's JSON object
    /// (`json:",inline"`, e.g. `Volume.volumeSource`).
    Inline,
    /// `repeated`: a JSON array.
    Repeated,
    /// `map<K, V>` with keys of this scalar kind: a JSON object.
    Map(Kind),
}

/// The type of a value.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    String,
    /// `[]byte`: base64 in JSON.
    Bytes,
    Bool,
    Int32,
    Int64,
    /// `float64`: a protobuf `double`.
    Float64,
    Message(&'static Message),
    /// `metav1.Time`: seconds on the wire, RFC 3339 in JSON, `null` when zero.
    Time,
    /// `metav1.MicroTime`: seconds and nanoseconds, RFC 3339 with microseconds in JSON.
    MicroTime,
    /// `resource.Quantity`: its string form in both.
    Quantity,
    /// `intstr.IntOrString`: a JSON number or string.
    IntOrString,
    /// JSON text as bytes (`runtime.RawExtension`, `metav1.FieldsV1`,
    /// apiextensions `JSON`): the JSON value itself.
    RawJson,
    /// `JSONSchemaPropsOrArray`: a schema or an array of schemas.
    SchemaOrArray(&'static Message),
    /// `JSONSchemaPropsOrBool`: a schema or a bool.
    SchemaOrBool(&'static Message),
    /// `JSONSchemaPropsOrStringArray`: a schema or an array of strings.
    SchemaOrStringArray(&'static Message),
}

/// A kind with a protobuf form.
#[derive(Debug)]
pub(crate) struct Root {
    /// The apiVersion it is served with; empty for meta.k8s.io types that every group
    /// version carries (Status, DeleteOptions, WatchEvent).
    pub(crate) api_version: &'static str,
    /// The kind.
    pub(crate) kind: &'static str,
    /// Its message.
    pub(crate) message: &'static Message,
}
