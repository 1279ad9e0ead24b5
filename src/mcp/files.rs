//! The file tools: read, write and list files in a sandbox, and push a
//! file or directory of the project into it. Paths in the sandbox are
//! absolute; host paths stay inside the project (`host_path`).

use base64::Engine as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::host_path::inside_project;
use super::session::Session;
use super::target::target;
use super::tool_error::ToolError;
use crate::sandbox::{FileEntry, FileKind};

/// `read_file`.
pub const READ_ABOUT: &str = "Read a file in a sandbox. Text comes back as it is \
(encoding `utf-8`); a file that is not UTF-8 comes back base64-encoded (encoding `base64`). \
At most max_bytes are returned (truncated tells).";

/// `write_file`.
pub const WRITE_ABOUT: &str = "Write a file in a sandbox, replacing it if it exists; \
missing parent directories are made. The file belongs to the sandbox's user. Give content \
as text, or as base64 with encoding `base64` for binary data.";

/// `list_files`.
pub const LIST_ABOUT: &str = "List a directory in a sandbox: each entry's name, kind \
(file, dir, symlink, other), size in bytes, mode and modification time.";

/// `push_files`.
pub const PUSH_ABOUT: &str = "Copy a file or directory of the project on the host (a path \
relative to the project's root; paths outside the project are refused) into a sandbox.";

/// The default and the largest `max_bytes` of `read_file`.
const DEFAULT_READ: u64 = 1 << 20;
const MAX_READ: u64 = 16 << 20;
/// The largest file `read_file` reads at all: it is read whole, then cut.
const MAX_WHOLE: u64 = 64 << 20;

/// How file content is carried.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum Encoding {
    /// Text as it is.
    #[default]
    #[serde(rename = "utf-8")]
    Utf8,
    /// Base64 (RFC 4648, with padding).
    #[serde(rename = "base64")]
    Base64,
}

/// The arguments of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// Absolute path in the sandbox, e.g. /home/sandbox/out.txt.
    pub path: String,
    /// The sandbox; may be left out when the session has one.
    pub sandbox: Option<String>,
    /// Return at most this many bytes (default 1048576, at most 16777216).
    #[schemars(range(min = 1))]
    pub max_bytes: Option<u64>,
}

/// What `read_file` answers.
#[derive(Debug, Serialize)]
pub struct Read {
    sandbox: String,
    path: String,
    size: u64,
    encoding: Encoding,
    content: String,
    truncated: bool,
}

/// `read_file`.
pub async fn read(session: &Session, args: ReadArgs) -> Result<Read, ToolError> {
    let cap = match args.max_bytes {
        None => DEFAULT_READ,
        Some(n) if (1..=MAX_READ).contains(&n) => n,
        Some(n) => {
            return Err(ToolError::new(
                format!("max_bytes {n} is out of range"),
                format!("give 1 to {MAX_READ}"),
            ))
        }
    };
    let sandbox = target(session, args.sandbox.as_deref()).await?;
    // A file lists as itself: its size, before it is read into memory.
    if let [entry] = sandbox.files().list_files(&args.path).await?.as_slice() {
        if entry.kind == FileKind::File && entry.size > MAX_WHOLE {
            return Err(ToolError::new(
                format!(
                    "{} is {} bytes; read_file reads files up to {MAX_WHOLE}",
                    args.path, entry.size
                ),
                "read a part with run_command (`head -c N FILE`, `tail -c N FILE`)",
            ));
        }
    }
    let mut bytes = sandbox.read_file(&args.path).await?;
    let size = bytes.len() as u64;
    let truncated = size > cap;
    bytes.truncate(cap as usize);
    let (encoding, content) = match String::from_utf8(bytes) {
        Ok(text) => (Encoding::Utf8, text),
        Err(e) => (
            Encoding::Base64,
            base64::engine::general_purpose::STANDARD.encode(e.into_bytes()),
        ),
    };
    Ok(Read {
        sandbox: sandbox.name().to_string(),
        path: args.path,
        size,
        encoding,
        content,
        truncated,
    })
}

/// The arguments of `write_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    /// Absolute path in the sandbox, e.g. /home/sandbox/main.py.
    pub path: String,
    /// The file's content.
    pub content: String,
    /// `utf-8` (the default): content is the text; `base64`: content is base64 of the bytes.
    #[serde(default)]
    pub encoding: Encoding,
    /// The sandbox; may be left out when the session has one (or none yet: one is made).
    pub sandbox: Option<String>,
}

/// What `write_file` answers.
#[derive(Debug, Serialize)]
pub struct Written {
    sandbox: String,
    path: String,
    bytes: usize,
}

/// `write_file`.
pub async fn write(session: &Session, args: WriteArgs) -> Result<Written, ToolError> {
    let data = match args.encoding {
        Encoding::Utf8 => args.content.into_bytes(),
        Encoding::Base64 => base64::engine::general_purpose::STANDARD
            .decode(args.content.trim())
            .map_err(|e| {
                ToolError::new(
                    format!("content is not base64: {e}"),
                    "encode the bytes as standard base64 with padding, or send text with encoding utf-8",
                )
            })?,
    };
    let bytes = data.len();
    let sandbox = target(session, args.sandbox.as_deref()).await?;
    sandbox.write_file(&args.path, data).await?;
    Ok(Written {
        sandbox: sandbox.name().to_string(),
        path: args.path,
        bytes,
    })
}

/// The arguments of `list_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// Absolute path of a directory in the sandbox, e.g. /home/sandbox.
    pub path: String,
    /// The sandbox; may be left out when the session has one (or none yet: one is made).
    pub sandbox: Option<String>,
}

/// What `list_files` answers.
#[derive(Debug, Serialize)]
pub struct Listed {
    sandbox: String,
    path: String,
    entries: Vec<FileEntry>,
}

/// `list_files`.
pub async fn list(session: &Session, args: ListArgs) -> Result<Listed, ToolError> {
    let sandbox = target(session, args.sandbox.as_deref()).await?;
    let entries = sandbox.files().list_files(&args.path).await?;
    Ok(Listed {
        sandbox: sandbox.name().to_string(),
        path: args.path,
        entries,
    })
}

/// The arguments of `push_files`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PushArgs {
    /// A file or directory on the host, relative to the project's root and inside it.
    pub source: String,
    /// Absolute destination in the sandbox; a path ending in `/` is a directory to copy into.
    pub destination: String,
    /// The sandbox; may be left out when the session has one (or none yet: one is made).
    pub sandbox: Option<String>,
}

/// What `push_files` answers.
#[derive(Debug, Serialize)]
pub struct Pushed {
    sandbox: String,
    source: String,
    destination: String,
    files: u64,
    bytes: u64,
}

/// `push_files`.
pub async fn push(session: &Session, args: PushArgs) -> Result<Pushed, ToolError> {
    let host = inside_project(&session.config().project.root, &args.source)?;
    let sandbox = target(session, args.sandbox.as_deref()).await?;
    let report = sandbox.push(&host, &args.destination).await?;
    Ok(Pushed {
        sandbox: sandbox.name().to_string(),
        source: args.source,
        destination: args.destination,
        files: report.files,
        bytes: report.bytes,
    })
}
