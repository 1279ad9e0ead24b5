//! Every `pocketdock.*` label key, once: on containers and images that
//! pocketdock creates, and in the filters that find them again.

/// `true` on everything pocketdock manages.
pub const MANAGED: &str = "pocketdock.managed";
/// Project name.
pub const PROJECT: &str = "pocketdock.project";
/// The job id, or a persistent sandbox's name (a wire name kept, see the glossary's aliases).
pub const INSTANCE: &str = "pocketdock.instance";
/// Profile name, when created from one.
pub const PROFILE: &str = "pocketdock.profile";
/// RFC 3339 creation time.
pub const CREATED_AT: &str = "pocketdock.created-at";
/// `true` when the sandbox survives shutdown.
pub const PERSIST: &str = "pocketdock.persist";
/// On a snapshot image: the sandbox it was committed from.
pub const SNAPSHOT_OF: &str = "pocketdock.snapshot-of";
/// On a fork's image: the sandbox it was committed from (`Sandbox::fork`).
pub const FORK_OF: &str = "pocketdock.fork-of";
/// On a fork's copy: the id of the image it was made from, removed when
/// the last container carrying this label goes.
pub const FORK_IMAGE: &str = "pocketdock.fork-image";
/// On a persistent sandbox: its sandbox record's directory on the host.
pub const DATA_PATH: &str = "pocketdock.data-path";
/// On a built profile image: the SHA-256 of the build context it was built from.
pub const CONTEXT_SHA256: &str = "pocketdock.context-sha256";
/// On a job's sandbox: the job's name.
pub const JOB: &str = "pocketdock.job";
/// On a job's sandbox: its sandbox instance id (`grader[student=alice]`).
pub const SANDBOX: &str = "pocketdock.sandbox";
/// On a sandbox with the in-sandbox helper: the host directory holding its
/// socket (mounted at `/.pocketdock/run`).
pub const AGENT: &str = "pocketdock.agent";
/// On a sandbox whose helper is its first process and runs as root: the
/// image's own user, which commands naming no user run as.
pub const USER: &str = "pocketdock.user";
/// Default command timeout of a sandbox in seconds (`SandboxSpec::timeout`,
/// `create --timeout`), used by runs given none; `0` is no limit; absent
/// is the 30 s default.
pub const TIMEOUT: &str = "pocketdock.timeout";
/// On a sandbox tied to the process that made it (`SandboxSpec::owned`):
/// `PID START_TICKS BOOT_ID`, so `doctor` and `prune` can tell when that
/// process is gone (`sandbox::owner`).
pub const OWNER: &str = "pocketdock.owner";
/// On a pooled sandbox: the spec key it was made for (`fleet::pool::spec_key`).
/// Kept after a claim (labels are fixed at create).
pub const POOL: &str = "pocketdock.pool";
/// On a CLI pool's warm sandbox: how many the pool keeps warm.
pub const POOL_SIZE: &str = "pocketdock.pool-size";
/// On a CLI pool's warm sandbox: its project's directory on the host that
/// started the pool, so that a pool whose project was deleted is found.
pub const PROJECT_DIR: &str = "pocketdock.project-dir";
/// The limits a sandbox was created with (`sandbox::RequestedLimits`), so
/// `info` can tell them from what its cgroup enforces.
pub const LIMITS: &str = "pocketdock.limits";

/// On a sandbox made through `pocketdock mcp`: the MCP session that owns it
/// (removed when that session ends, unless the server runs with `--keep`).
pub const MCP_SESSION: &str = "pocketdock.mcp-session";

/// On a step cache image: the full key of the step whose result it is.
pub const CACHE_KEY: &str = "pocketdock.cache-key";
