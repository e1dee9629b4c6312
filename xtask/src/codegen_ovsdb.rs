//! `cargo xtask codegen` for the typed tables of the vendored OVSDB schemas
//! ([`DATABASES`]: `OVN_Northbound` in `crates/udn-ovsdb/src/nb/generated/`,
//! `OVN_Southbound` in `src/sb/generated/`, `Open_vSwitch` in `src/vswitch/generated/`):
//! per database, one file per table (a module with the table and column name constants, the
//! typed struct and its `Table` impl) and a `mod.rs` listing them.
//!
//! [`render`] is a pure function of the schema; [`rustfmt`] then formats its output, so the
//! checked-in file is exactly what `cargo fmt` keeps.
//!
//! Naming rules:
//! - structs are the table name in UpperCamelCase, each `_`-separated part capitalised and
//!   the rest lower-cased (`NB_Global` -> `NbGlobal`, `ACL` -> `Acl`, `QoS` -> `Qos`,
//!   `Open_vSwitch` -> `OpenVswitch`);
//! - fields, modules and file names are lower-cased names (`Logical_Switch` ->
//!   `logical_switch`, in `logical_switch.rs`); a name
//!   that is a Rust keyword gets a trailing `_` (`type` -> `type_`, `match` -> `match_`);
//! - column constants are upper-cased column names (`match` -> `MATCH`); a column named
//!   `table` (`RBAC_Permission.table`) gets `TABLE_`, `TABLE` being the table name.
//!
//! Column types map to `i64`/`f64`/`bool`/`String`/`Uuid` for scalars, `Option<T>` for
//! optional values (0 or 1 element), `BTreeSet<T>` for sets (`Vec<f64>` for reals, which
//! are not `Ord`) and `BTreeMap<K, V>` for maps (`Vec<(f64, V)>` for real keys).
//!
//! The schemas are read from their files, so a newly vendored schema can be generated before
//! `udn-ovsdb` compiles its module. Bootstrap: xtask links `udn-ovsdb`, which includes the
//! generated files; a change to `udn-ovsdb/src/table.rs` that breaks the checked-in files
//! must regenerate them in the same change.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, bail};
use udn_ovsdb::protocol::Atom;
use udn_ovsdb::schema::{
    AtomicType, BaseType, ColumnSchema, ColumnType, DbSchema, RefType, TableSchema,
};

use crate::codegen::GeneratedFile;

/// One vendored database whose typed tables are generated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Database {
    /// The `udn-ovsdb` module holding the tables (`nb`): the generated impls name its
    /// `DATABASE` constant.
    pub module: &'static str,
    /// The vendored schema, relative to the workspace root (compiled into
    /// `udn_ovsdb::<module>::SCHEMA_JSON`).
    pub schema_path: &'static str,
    /// The directory of the generated files, relative to the workspace root.
    pub generated_dir: &'static str,
}

/// `OVN_Northbound`.
pub const NB: Database = Database {
    module: "nb",
    schema_path: "crates/udn-ovsdb/schema/ovn-nb.ovsschema",
    generated_dir: "crates/udn-ovsdb/src/nb/generated",
};

/// `OVN_Southbound`.
pub const SB: Database = Database {
    module: "sb",
    schema_path: "crates/udn-ovsdb/schema/ovn-sb.ovsschema",
    generated_dir: "crates/udn-ovsdb/src/sb/generated",
};

/// `Open_vSwitch`.
pub const VSWITCH: Database = Database {
    module: "vswitch",
    schema_path: "crates/udn-ovsdb/schema/vswitch.ovsschema",
    generated_dir: "crates/udn-ovsdb/src/vswitch/generated",
};

/// Every database with generated tables, in generation order.
pub const DATABASES: [Database; 3] = [NB, SB, VSWITCH];

/// Names the generated module imports or declares, which no table may take.
const TAKEN_TYPE_NAMES: [&str; 12] = [
    "BTreeMap",
    "BTreeSet",
    "Option",
    "Row",
    "RowError",
    "RowReader",
    "Self",
    "String",
    "Table",
    "Uuid",
    "Vec",
    "TABLES",
];

/// Rust keywords (strict, reserved and 2024 `gen`), which get a trailing `_`.
const KEYWORDS: [&str; 52] = [
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate",
    "do", "dyn", "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl",
    "in", "let", "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref",
    "return", "self", "static", "struct", "super", "trait", "true", "try", "type", "typeof",
    "unsafe", "unsized", "use", "virtual", "where", "while", "yield", "union",
];

/// The generated files of every database of [`DATABASES`], formatted.
pub fn generated_files(root: &Path) -> anyhow::Result<Vec<GeneratedFile>> {
    let mut files = Vec::new();
    for database in &DATABASES {
        files.extend(database_files(root, database)?);
    }
    Ok(files)
}

/// The generated files of `database`, formatted, from its schema file under `root`.
pub fn database_files(root: &Path, database: &Database) -> anyhow::Result<Vec<GeneratedFile>> {
    let path = root.join(database.schema_path);
    let text = fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
    let schema =
        DbSchema::from_text(&text).with_context(|| format!("parse {}", database.schema_path))?;
    render(database, &schema)
        .with_context(|| format!("render the typed tables of {}", database.schema_path))?
        .into_iter()
        .map(|(name, source)| {
            Ok(GeneratedFile {
                path: Path::new(database.generated_dir).join(name),
                contents: rustfmt(root, &source)?,
            })
        })
        .collect()
}

/// Formats Rust source with the pinned toolchain's rustfmt and the workspace `rustfmt.toml`.
pub fn rustfmt(root: &Path, source: &str) -> anyhow::Result<String> {
    let mut child = Command::new("rustfmt")
        .args(["--edition", "2024", "--emit", "stdout", "--config-path"])
        .arg(root.join("rustfmt.toml"))
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("run rustfmt (install it with `rustup component add rustfmt`)")?;
    child
        .stdin
        .take()
        .context("rustfmt stdin")?
        .write_all(source.as_bytes())
        .context("write to rustfmt")?;
    let out = child.wait_with_output().context("wait for rustfmt")?;
    if !out.status.success() {
        bail!(
            "rustfmt failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8(out.stdout).context("rustfmt output is not UTF-8")
}

/// The Rust sources of the typed tables of `schema` (the schema of `database`), unformatted,
/// as (file name, source): `mod.rs` first, then one `<table module>.rs` per table. Fails on
/// names that would collide once converted to Rust identifiers.
pub fn render(database: &Database, schema: &DbSchema) -> anyhow::Result<Vec<(String, String)>> {
    let mut type_names = BTreeSet::new();
    let mut module_names = BTreeSet::new();
    for name in schema.tables.keys() {
        let ty = type_name(name);
        if ty.is_empty()
            || TAKEN_TYPE_NAMES.contains(&ty.as_str())
            || !type_names.insert(ty.clone())
        {
            bail!("table {name}: struct name {ty:?} is empty, reserved or taken by another table");
        }
        if !module_names.insert(snake_name(name)) {
            bail!(
                "table {name}: module name {:?} is taken by another table",
                snake_name(name)
            );
        }
    }
    let mut files = vec![("mod.rs".to_owned(), render_mod(database, schema))];
    for (name, table) in &schema.tables {
        let mut out = String::new();
        render_table(&mut out, database, name, table)?;
        files.push((format!("{}.rs", snake_name(name)), out));
    }
    Ok(files)
}

/// `mod.rs`: the table modules, their structs re-exported, and the list of tables.
fn render_mod(database: &Database, schema: &DbSchema) -> String {
    let mut out = String::new();
    header(&mut out, database, schema);
    for name in schema.tables.keys() {
        let _ = writeln!(out, "pub mod {};", snake_name(name));
    }
    let _ = writeln!(out);
    for name in schema.tables.keys() {
        let _ = writeln!(out, "pub use {}::{};", snake_name(name), type_name(name));
    }
    let _ = writeln!(out, "\n/// Every table of the schema, sorted.");
    let _ = writeln!(out, "pub const TABLES: &[&str] = &[");
    for name in schema.tables.keys() {
        let _ = writeln!(out, "    {}::TABLE,", snake_name(name));
    }
    let _ = writeln!(out, "];");
    out
}

fn generated_marker(out: &mut String, database: &Database) {
    let _ = writeln!(
        out,
        "// @generated by `cargo xtask codegen` from {}; do not edit.\n\
         // Regenerate with `cargo xtask codegen`; `cargo xtask codegen --check` (CI) fails when\n\
         // this file is stale.\n",
        database.schema_path
    );
}

fn header(out: &mut String, database: &Database, schema: &DbSchema) {
    generated_marker(out, database);
    let _ = writeln!(
        out,
        "//! Typed rows of every table of the vendored `{}` schema {}: one struct per table\n\
         //! (fields sorted by column name, after the row's `uuid`), in a module per table with the\n\
         //! table and column names and a [`Table`](crate::table::Table) impl converting to and\n\
         //! from rows.\n\
         //!\n\
         //! Naming: structs are table names in UpperCamelCase (`Logical_Switch` ->\n\
         //! `LogicalSwitch`, `NB_Global` -> `NbGlobal`), fields and modules lower-cased names,\n\
         //! with a trailing `_` on Rust keywords (`type_`, `match_`); column constants are\n\
         //! upper-cased column names (`TABLE_` for a column named `table`).\n",
        schema.name, schema.version
    );
}

/// The `use` lines of one table's file: only what its columns need.
fn imports(out: &mut String, columns: &[Column<'_>]) {
    let uses = |wanted: fn(Kind) -> bool| columns.iter().any(|c| wanted(c.kind));
    let collections: Vec<&str> = [
        (
            "BTreeMap",
            uses(|k| matches!(k, Kind::Map(key, _) if key != AtomicType::Real)),
        ),
        (
            "BTreeSet",
            uses(|k| matches!(k, Kind::Set(a) if a != AtomicType::Real)),
        ),
    ]
    .into_iter()
    .filter_map(|(name, used)| used.then_some(name))
    .collect();
    if !collections.is_empty() {
        let _ = writeln!(
            out,
            "use std::collections::{{{}}};\n",
            collections.join(", ")
        );
    }
    let helpers: Vec<&str> = [
        ("atom_value", uses(|k| matches!(k, Kind::Scalar(_)))),
        ("map_value", uses(|k| matches!(k, Kind::Map(..)))),
        (
            "set_value",
            uses(|k| matches!(k, Kind::Optional(_) | Kind::Set(_))),
        ),
    ]
    .into_iter()
    .filter_map(|(name, used)| used.then_some(name))
    .collect();
    let _ = writeln!(out, "use crate::protocol::{{Row, Uuid}};");
    let mut table_items = vec!["RowError", "RowReader", "Table"];
    table_items.extend(helpers);
    let _ = writeln!(out, "use crate::table::{{{}}};\n", table_items.join(", "));
}

fn render_table(
    out: &mut String,
    database: &Database,
    name: &str,
    table: &TableSchema,
) -> anyhow::Result<()> {
    let ty = type_name(name);
    let columns: Vec<Column<'_>> = table
        .columns
        .iter()
        .map(|(column, schema)| Column::new(column, schema))
        .collect();
    check_column_names(name, &columns)?;

    generated_marker(out, database);
    let _ = writeln!(
        out,
        "//! The `{name}` table: its name and column names, the typed row [`{ty}`] and its\n\
         //! [`Table`] impl.\n"
    );
    imports(out, &columns);
    let _ = writeln!(out, "/// The table name.");
    let _ = writeln!(out, "pub const TABLE: &str = {name:?};");
    for column in &columns {
        let _ = writeln!(out, "/// The `{}` column.", column.name);
        let _ = writeln!(
            out,
            "pub const {}: &str = {:?};",
            column.constant, column.name
        );
    }
    let _ = writeln!(out);

    // The struct.
    let _ = writeln!(out, "/// A row of the `{name}` table.");
    let _ = writeln!(out, "///");
    let _ = writeln!(out, "/// {}", table_words(table));
    let needs_manual_default = columns
        .iter()
        .any(|c| c.kind == Kind::Scalar(AtomicType::Uuid));
    let derives = if needs_manual_default {
        "Debug, Clone, PartialEq"
    } else {
        "Debug, Clone, PartialEq, Default"
    };
    let _ = writeln!(out, "#[derive({derives})]");
    let _ = writeln!(out, "pub struct {ty} {{");
    let _ = writeln!(
        out,
        "    /// The row's `_uuid`, when it came from the server."
    );
    let _ = writeln!(out, "    pub uuid: Option<Uuid>,");
    for column in &columns {
        for line in column.doc_lines() {
            let _ = writeln!(
                out,
                "    ///{}{line}",
                if line.is_empty() { "" } else { " " }
            );
        }
        let _ = writeln!(
            out,
            "    pub {}: {},",
            column.field,
            column.kind.rust_type()
        );
    }
    let _ = writeln!(out, "}}\n");

    if needs_manual_default {
        render_default(out, &ty, &columns);
    }
    // The name constants are items of this same module.
    render_impl(out, (&ty, database.module), "self", &columns);
    Ok(())
}

fn check_column_names(table: &str, columns: &[Column<'_>]) -> anyhow::Result<()> {
    let mut fields = BTreeSet::from(["uuid".to_owned()]);
    let mut constants = BTreeSet::from(["TABLE".to_owned()]);
    for column in columns {
        if column.field.is_empty() || !fields.insert(column.field.clone()) {
            bail!(
                "column {table}.{}: field name {:?} is empty or taken",
                column.name,
                column.field
            );
        }
        if column.constant.is_empty() || !constants.insert(column.constant.clone()) {
            bail!(
                "column {table}.{}: constant name {:?} is empty or taken",
                column.name,
                column.constant
            );
        }
    }
    Ok(())
}

fn render_default(out: &mut String, ty: &str, columns: &[Column<'_>]) {
    let _ = writeln!(out, "impl Default for {ty} {{");
    let _ = writeln!(
        out,
        "    /// Every column at its RFC 7047 default (the all-zero UUID for uuids)."
    );
    let _ = writeln!(out, "    fn default() -> Self {{");
    let _ = writeln!(out, "        Self {{");
    let _ = writeln!(out, "            uuid: None,");
    for column in columns {
        let value = if column.kind == Kind::Scalar(AtomicType::Uuid) {
            "Uuid::from_u128(0)"
        } else {
            "Default::default()"
        };
        let _ = writeln!(out, "            {}: {value},", column.field);
    }
    let _ = writeln!(out, "        }}");
    let _ = writeln!(out, "    }}");
    let _ = writeln!(out, "}}\n");
}

fn render_impl(
    out: &mut String,
    (ty, database): (&str, &str),
    module: &str,
    columns: &[Column<'_>],
) {
    let _ = writeln!(out, "impl Table for {ty} {{");
    let _ = writeln!(
        out,
        "    const DATABASE: &'static str = crate::{database}::DATABASE;"
    );
    let _ = writeln!(out, "    const TABLE: &'static str = {module}::TABLE;");
    let _ = writeln!(out, "    const COLUMNS: &'static [&'static str] = &[");
    for column in columns {
        let _ = writeln!(out, "        {module}::{},", column.constant);
    }
    let _ = writeln!(out, "    ];\n");
    let _ = writeln!(out, "    fn uuid(&self) -> Option<Uuid> {{");
    let _ = writeln!(out, "        self.uuid");
    let _ = writeln!(out, "    }}\n");
    let _ = writeln!(out, "    fn to_row(&self) -> Row {{");
    let _ = writeln!(out, "        Row::from([");
    for column in columns {
        let field = &column.field;
        let value = match column.kind {
            Kind::Scalar(_) => format!("atom_value(&self.{field})"),
            Kind::Optional(_) | Kind::Set(_) => format!("set_value(&self.{field})"),
            Kind::Map(AtomicType::Real, _) => {
                format!("map_value(self.{field}.iter().map(|(k, v)| (k, v)))")
            }
            Kind::Map(..) => format!("map_value(&self.{field})"),
        };
        let _ = writeln!(
            out,
            "            ({module}::{}.to_owned(), {value}),",
            column.constant
        );
    }
    let _ = writeln!(out, "        ])");
    let _ = writeln!(out, "    }}\n");
    let reader = if columns.is_empty() {
        "_reader"
    } else {
        "reader"
    };
    let _ = writeln!(
        out,
        "    fn from_row(uuid: Option<Uuid>, row: &Row) -> Result<Self, RowError> {{"
    );
    let _ = writeln!(
        out,
        "        let {reader} = RowReader::new({module}::TABLE, row);"
    );
    let _ = writeln!(out, "        Ok(Self {{");
    let _ = writeln!(out, "            uuid,");
    for column in columns {
        let constant = format!("{module}::{}", column.constant);
        let read = match column.kind {
            Kind::Scalar(AtomicType::Uuid) => {
                format!("scalar_or({constant}, || Uuid::from_u128(0))")
            }
            Kind::Scalar(_) => format!("scalar({constant})"),
            Kind::Optional(_) => format!("optional({constant})"),
            Kind::Set(_) => format!("set({constant})"),
            Kind::Map(..) => format!("map({constant})"),
        };
        let _ = writeln!(out, "            {}: reader.{read}?,", column.field);
    }
    let _ = writeln!(out, "        }})");
    let _ = writeln!(out, "    }}");
    let _ = writeln!(out, "}}\n");
}

/// The shape of a column's Rust type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Exactly one value.
    Scalar(AtomicType),
    /// Zero or one value.
    Optional(AtomicType),
    /// Any other number of values.
    Set(AtomicType),
    /// Key to value.
    Map(AtomicType, AtomicType),
}

impl Kind {
    fn of(ty: &ColumnType) -> Self {
        match &ty.value {
            Some(value) => Self::Map(ty.key.atomic, value.atomic),
            None if ty.is_scalar() => Self::Scalar(ty.key.atomic),
            None if ty.min == 0 && ty.max == Some(1) => Self::Optional(ty.key.atomic),
            None => Self::Set(ty.key.atomic),
        }
    }

    fn rust_type(self) -> String {
        match self {
            Self::Scalar(a) => atom_type(a).to_owned(),
            Self::Optional(a) => format!("Option<{}>", atom_type(a)),
            Self::Set(AtomicType::Real) => "Vec<f64>".to_owned(),
            Self::Set(a) => format!("BTreeSet<{}>", atom_type(a)),
            Self::Map(AtomicType::Real, v) => format!("Vec<(f64, {})>", atom_type(v)),
            Self::Map(k, v) => format!("BTreeMap<{}, {}>", atom_type(k), atom_type(v)),
        }
    }
}

fn atom_type(atomic: AtomicType) -> &'static str {
    match atomic {
        AtomicType::Integer => "i64",
        AtomicType::Real => "f64",
        AtomicType::Boolean => "bool",
        AtomicType::String => "String",
        AtomicType::Uuid => "Uuid",
    }
}

/// One column with its Rust names.
struct Column<'s> {
    name: &'s str,
    schema: &'s ColumnSchema,
    kind: Kind,
    field: String,
    constant: String,
}

impl<'s> Column<'s> {
    fn new(name: &'s str, schema: &'s ColumnSchema) -> Self {
        Self {
            name,
            schema,
            kind: Kind::of(&schema.ty),
            field: snake_name(name),
            constant: column_constant(name),
        }
    }

    /// The field's doc comment: the column and its type in words, allowed values, flags.
    fn doc_lines(&self) -> Vec<String> {
        let ty = &self.schema.ty;
        let mut lines = vec![format!("`{}`: {}.", self.name, type_words(ty))];
        let enums = [
            (if ty.is_map() { "keys" } else { "values" }, Some(&ty.key)),
            ("values", ty.value.as_ref()),
        ];
        for (what, base) in enums {
            if let Some(values) = base.and_then(|b| b.enum_values.as_ref()) {
                lines.push(String::new());
                lines.push(format!("Allowed {what}: {}.", atoms_words(values)));
            }
        }
        if !self.schema.mutable {
            lines.push(String::new());
            lines.push("Immutable: set on insert only.".to_owned());
        }
        if self.schema.ephemeral {
            lines.push(String::new());
            lines.push("Ephemeral: not persisted by the server.".to_owned());
        }
        lines
    }
}

fn atoms_words(atoms: &[Atom]) -> String {
    atoms
        .iter()
        .map(|atom| format!("`{}`", atom.to_json()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn table_words(table: &TableSchema) -> String {
    let mut words = if table.is_root {
        "Root table: rows stay until deleted.".to_owned()
    } else {
        "Not a root table: the server deletes rows no strong reference points at.".to_owned()
    };
    for index in &table.indexes {
        let columns: Vec<String> = index.iter().map(|c| format!("`{c}`")).collect();
        let _ = write!(words, " Unique index: {}.", columns.join(" + "));
    }
    words
}

/// A column type in words: `set of strong references to Logical_Switch_Port`.
fn type_words(ty: &ColumnType) -> String {
    let bounds = match (ty.min, ty.max) {
        (0, None) => String::new(),
        (min, None) => format!("{min} or more "),
        (0, Some(max)) => format!("at most {max} "),
        (min, Some(max)) if min == max => format!("exactly {min} "),
        (min, Some(max)) => format!("{min} to {max} "),
    };
    match &ty.value {
        Some(value) => format!(
            "map of {bounds}{} to {}",
            base_words(&ty.key, false),
            base_words(value, false)
        ),
        None if ty.is_scalar() => base_words(&ty.key, false),
        None if ty.min == 0 && ty.max == Some(1) => {
            format!("optional {}", base_words(&ty.key, false))
        }
        None => format!("set of {bounds}{}", base_words(&ty.key, true)),
    }
}

fn base_words(base: &BaseType, plural: bool) -> String {
    let s = if plural { "s" } else { "" };
    if let Some(table) = &base.ref_table {
        let strength = match base.ref_type {
            RefType::Strong => "strong",
            RefType::Weak => "weak",
        };
        return format!("{strength} reference{s} to `{table}`");
    }
    let noun = match base.atomic {
        AtomicType::Integer => "integer",
        AtomicType::Real => "real",
        AtomicType::Boolean => "boolean",
        AtomicType::String => "string",
        AtomicType::Uuid => "UUID",
    };
    format!("{noun}{s}")
}

/// A column's name constant: the upper-cased name without a keyword's `_`, and `TABLE_` for
/// `table` (the module's `TABLE` is the table name).
pub fn column_constant(column: &str) -> String {
    let constant = snake_name(column).trim_end_matches('_').to_uppercase();
    if constant == "TABLE" {
        "TABLE_".to_owned()
    } else {
        constant
    }
}

/// A table name as a Rust type: `Logical_Switch` -> `LogicalSwitch`, `NB_Global` -> `NbGlobal`.
pub fn type_name(table: &str) -> String {
    let mut out: String = table
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|part| !part.is_empty())
        .map(|part| {
            let lower = part.to_ascii_lowercase();
            let mut chars = lower.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect();
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'T');
    }
    out
}

/// A table or column name as a Rust field or module name: lower-cased, other characters
/// than ASCII letters, digits and `_` replaced by `_`, a trailing `_` on Rust keywords.
pub fn snake_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    if out.starts_with(|c: char| c.is_ascii_digit()) || out == "_" {
        out.insert(0, '_');
    }
    if KEYWORDS.contains(&out.as_str()) {
        out.push('_');
    }
    out
}
