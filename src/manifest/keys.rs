//! Every key the manifest language has, with its description and its JSON
//! Schema. One table feeds the decoder (what is known, what to suggest),
//! the generated schema and the reference docs, so they cannot drift apart.

use std::sync::LazyLock;

use serde_json::{json, Value};

use crate::steps::Kind;

/// One key of one kind of map in the manifest.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyDoc {
    /// The key as written in YAML.
    pub name: &'static str,
    /// What it means, for the schema and for humans.
    pub doc: &'static str,
    /// Its JSON Schema.
    pub schema: fn() -> Value,
    /// Reserved for a later version: parsed, and rejected as not supported yet.
    pub reserved: bool,
}

pub(crate) const fn key(name: &'static str, doc: &'static str, schema: fn() -> Value) -> KeyDoc {
    KeyDoc {
        name,
        doc,
        schema,
        reserved: false,
    }
}

// No key is reserved today; kept for the next one a version announces.
#[allow(dead_code)]
const fn reserved(name: &'static str, doc: &'static str) -> KeyDoc {
    KeyDoc {
        name,
        doc,
        schema: || json!({ "not": {} }),
        reserved: true,
    }
}

pub(crate) fn template() -> Value {
    json!({ "type": "string" })
}
pub(crate) fn string_or_list() -> Value {
    json!({ "oneOf": [ { "type": "string" }, { "type": "array", "items": { "type": "string" } } ] })
}
pub(crate) fn boolean() -> Value {
    json!({ "type": "boolean" })
}
pub(crate) fn cache_choice() -> Value {
    json!({ "oneOf": [{ "type": "boolean" }, { "const": "force" }] })
}
pub(crate) fn size() -> Value {
    json!({ "oneOf": [
        { "type": "string", "pattern": "^\\s*[0-9]+\\s*([kKmMgG][iI]?[bB]?|[bB])?\\s*$|\\{\\{" },
        { "type": "integer", "minimum": 0 }
    ] })
}
pub(crate) fn duration() -> Value {
    json!({ "oneOf": [
        { "type": "number", "exclusiveMinimum": 0 },
        { "type": "string", "pattern": "^[0-9]+(\\.[0-9]+)?(ms|s|m|h)$" }
    ] })
}
pub(crate) fn string_map() -> Value {
    json!({ "type": "object", "additionalProperties": { "type": ["string", "number", "boolean"] } })
}
pub(crate) fn reference(def: &str) -> Value {
    json!({ "$ref": format!("#/$defs/{def}") })
}

/// Top-level keys.
pub(crate) const MANIFEST_KEYS: &[KeyDoc] = &[
    key(
        "version",
        "Manifest language version. Must be 1.",
        || json!({ "const": 1 }),
    ),
    key(
        "name",
        "Job name (a template over `vars` and `env`). Default: the file's name without extension, or its directory's name for `job.*` and `pocketdock.*`.",
        template,
    ),
    key(
        "vars",
        "Variables for templates (`{{ vars.NAME }}`), any YAML values. `--var NAME=VALUE` and `--vars-file FILE` override them.",
        || json!({ "type": "object" }),
    ),
    key(
        "env",
        "Names of host environment variables that templates may read as `{{ env.NAME }}`. Nothing else from the host environment is visible.",
        || json!({ "oneOf": [
            { "type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$" },
            { "type": "array", "items": { "type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$" } }
        ] }),
    ),
    key(
        "sandboxes",
        "Containers the job uses, by id (lowercase letters, digits, `-`, `_`).",
        || json!({ "type": "object", "propertyNames": { "pattern": "^[a-z0-9_][a-z0-9_-]*$" }, "additionalProperties": reference("sandbox") }),
    ),
    key(
        "steps",
        "What the job does, by id (lowercase letters, digits, `-`, `_`), in file order.",
        || json!({ "type": "object", "propertyNames": { "pattern": "^[a-z0-9_][a-z0-9_-]*$" }, "additionalProperties": reference("step") }),
    ),
    key(
        "secrets",
        "Secrets by name: `NAME: { env: HOST_VAR }` or `NAME: { file: path }` (relative to the manifest). A `run` step that lists a secret in its own `secrets` receives it as the environment variable NAME; its value is masked (`***`) in every log, record and report, and templates cannot read it.",
        || json!({ "type": "object", "propertyNames": { "pattern": "^[A-Za-z_][A-Za-z0-9_]*$" }, "additionalProperties": { "oneOf": [
            { "type": "object", "additionalProperties": false, "required": ["env"], "properties": { "env": { "type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$" } } },
            { "type": "object", "additionalProperties": false, "required": ["file"], "properties": { "file": { "type": "string" } } }
        ] } }),
    ),
    key(
        "cache",
        "Cache every step's result, keyed on its inputs, and reuse it when they have not changed (`apply --cache` does the same, `--no-cache` turns it off). Steps that cannot be cached are run as usual and the plan says why; `force` caches those with network on, host volumes or process state too. See docs/cache.md.",
        cache_choice,
    ),
    key(
        "limits",
        "Raise limits this job needs: `matrix` (combinations per sandbox, default 1000), `sandboxes` (instances per job, 1000), `steps` (step instances per job, 10000), `template_fuel` (work per template render: instructions and data built, 100000), `template_output` (bytes per rendered template, 1048576). A manifest may raise each up to a ceiling; `--limit NAME=N` sets any limit and wins. See docs/reliability.md.",
        || json!({ "type": "object", "additionalProperties": false, "properties": {
            "matrix": { "type": "integer", "minimum": 1, "maximum": 10000 },
            "sandboxes": { "type": "integer", "minimum": 1, "maximum": 10000 },
            "steps": { "type": "integer", "minimum": 1, "maximum": 100_000 },
            "template_fuel": { "type": "integer", "minimum": 1, "maximum": 1_000_000 },
            "template_output": { "type": "integer", "minimum": 1, "maximum": 16_777_216 }
        } }),
    ),
    key(
        "project",
        "Project settings, read from the project root's `pocketdock.yaml` (`pocketdock init` writes them): name, default profile and persistence, logs of persistent sandboxes. See docs/projects.md.",
        || reference("project"),
    ),
];

fn logging_keys() -> Value {
    reference("logging")
}
fn count() -> Value {
    json!({ "type": "integer", "minimum": 0 })
}

// Keys the project section and the install-level file share.
const BACKEND: KeyDoc = key(
    "backend",
    "What runs the sandboxes of every command: `engine` (Podman or Docker) or `kubernetes` (a pod per sandbox, from the kubeconfig; docs/kubernetes.md). `--backend`, then `POCKETDOCK_BACKEND`, win. Default: `engine`.",
    || json!({ "enum": ["engine", "kubernetes"] }),
);
const NAMESPACE: KeyDoc = key(
    "namespace",
    "Kubernetes namespace of the pods with `backend: kubernetes`; `--namespace` wins. Default: the kubeconfig context's.",
    || json!({ "type": "string" }),
);
const DEFAULT_PROFILE: KeyDoc = key(
    "default_profile",
    "Profile of `pocketdock create` without `--profile` or `--image`; manifest sandboxes name their own. Default: `minimal`.",
    || json!({ "type": "string" }),
);
const DEFAULT_PERSIST: KeyDoc = key(
    "default_persist",
    "`create` makes persistent sandboxes (stopped, not removed, on shutdown) unless `--no-persist`. Default: false.",
    boolean,
);
const ALLOW_HOST_PATHS: KeyDoc = key(
    "allow_host_paths",
    "Host directories, besides the project root, that manifests' host paths (volume sources, `push` sources, `pull` destinations) may point into; relative ones are relative to this file's directory. `--allow-host-path` adds more. A manifest cannot set it for itself. Default: none.",
    string_or_list,
);
const LOGGING: KeyDoc = key(
    "logging",
    "What persistent sandboxes' records keep.",
    logging_keys,
);
const LOG_LEVEL: KeyDoc = key(
    "log_level",
    "Lowest level the operational log (`.pocketdock/logs/pocketdock.log`) keeps: `debug`, `info`, `warning` or `error`. `--log-level` wins. Default: info.",
    || json!({ "enum": ["debug", "info", "warning", "error"] }),
);
const CONTAINERS: KeyDoc = key(
    "containers",
    "What happens to the project's sandboxes while nobody uses them.",
    || reference("containers"),
);

/// Keys of `project:` (and, but for `name`, of the install-level file).
pub(crate) const PROJECT_KEYS: &[KeyDoc] = &[
    key(
        "name",
        "Project name: the `pocketdock.project` label of its sandboxes, and what `list` shows by default. Default: the project directory's name.",
        || json!({ "type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]*$" }),
    ),
    DEFAULT_PROFILE,
    DEFAULT_PERSIST,
    ALLOW_HOST_PATHS,
    LOGGING,
    CONTAINERS,
    LOG_LEVEL,
    BACKEND,
    NAMESPACE,
];

/// Keys of a seed-style `.pocketdock/pocketdock.yaml`: the project's, at
/// the top level, its name spelled `project_name`.
pub(crate) const SEED_PROJECT_KEYS: &[KeyDoc] = &[
    key(
        "project_name",
        "In a seed-style `.pocketdock/pocketdock.yaml`: the project's name, as `project.name` in the root's `pocketdock.yaml`.",
        || json!({ "type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]*$" }),
    ),
    DEFAULT_PROFILE,
    DEFAULT_PERSIST,
    ALLOW_HOST_PATHS,
    LOGGING,
    CONTAINERS,
    LOG_LEVEL,
];

/// Keys of the install-level `~/.pocketdock/pocketdock.yaml`.
pub(crate) const INSTALL_KEYS: &[KeyDoc] = &[
    key(
        "socket",
        "Engine socket to use when neither `--socket` nor `POCKETDOCK_SOCKET` is given.",
        || json!({ "type": "string" }),
    ),
    DEFAULT_PROFILE,
    DEFAULT_PERSIST,
    ALLOW_HOST_PATHS,
    LOGGING,
    CONTAINERS,
    LOG_LEVEL,
    BACKEND,
    NAMESPACE,
];

/// Keys of `containers:`.
pub(crate) const CONTAINERS_KEYS: &[KeyDoc] = &[key(
    "idle_timeout",
    "Stop a running sandbox of the project once no command has run in it for this long (e.g. 4h, 30m, 90s); empty or 0: never. `pocketdock serve` checks while it runs, otherwise every CLI call and `doctor` do. Default: never.",
    || json!({ "oneOf": [ { "type": "number", "minimum": 0 }, { "type": "string" } ] }),
)];

/// Keys of `logging:`.
pub(crate) const LOGGING_KEYS: &[KeyDoc] = &[
    key(
        "auto_log",
        "Write a log file and a `history.jsonl` line for every `pocketdock run` in a persistent sandbox. Default: true.",
        boolean,
    ),
    key(
        "max_log_size",
        "Cap of one log file (e.g. 10m); output past it is cut and the log says so. Default: 10m.",
        size,
    ),
    key(
        "max_logs_per_instance",
        "Keep the newest N logs per instance; 0 keeps all. Default: 100.",
        count,
    ),
    key(
        "log_stdout",
        "Stream logs of persistent sandboxes (`run`, `python`, `run --detach`, sessions) keep what commands print on stdout. Default: true.",
        boolean,
    ),
    key(
        "log_stderr",
        "Stream logs of persistent sandboxes keep what commands print on stderr. Default: true.",
        boolean,
    ),
    key(
        "log_files",
        "How many files the operational log keeps: `pocketdock.log` and its copies rotated at `max_log_size` (`.1`, `.2`, ...). Default: 5.",
        || json!({ "type": "integer", "minimum": 1, "maximum": 100 }),
    ),
    key(
        "retention_days",
        "Delete an instance's logs older than this many days; 0 keeps them. Default: 30.",
        count,
    ),
];

/// Keys of one sandbox.
pub(crate) const SANDBOX_KEYS: &[KeyDoc] = &[
    key(
        "profile",
        "Image profile: one shipped with pocketdock (`minimal`, `dev`, `agent`, `embedded`) or one of the project's (`.pocketdock/profiles/NAME/`). Default: `minimal` when `image` is not set either.",
        template,
    ),
    key(
        "image",
        "Any local image reference instead of a profile (pocketdock never pulls).",
        template,
    ),
    key(
        "build",
        "`auto`: `apply` builds the profile's image first when it is missing or out of date (a project profile or a shipped one); `never`: a missing image fails the sandbox's steps with the build command to run. Default: never.",
        || json!({ "enum": ["auto", "never"] }),
    ),
    key(
        "mem",
        "Memory limit: bytes, or a number with k, m or g (powers of 1024), e.g. 512m. Default: 256m.",
        size,
    ),
    key(
        "cpu",
        "CPU share in percent of one core (200 = two cores). Default: 50.",
        || json!({ "type": "integer", "minimum": 1, "maximum": 100_000 }),
    ),
    key(
        "network",
        "Network on or off, or `dns-blocked`: on, but name lookups fail at once while raw IPs on the bridge still answer. Default: the profile's setting (`minimal` has none).",
        || json!({ "oneOf": [ { "type": "boolean" }, { "const": "dns-blocked" } ] }),
    ),
    key(
        "env",
        "Environment variables of the container (values are templates).",
        string_map,
    ),
    key("workdir", "Working directory inside the container.", template),
    key(
        "ports",
        "Published ports: `HOST:CONTAINER` or `CONTAINER`, optionally `/tcp` or `/udp`.",
        string_or_list,
    ),
    key(
        "volumes",
        "Bind mounts: `HOST:CONTAINER` or `HOST:CONTAINER:ro`; a HOST starting with `.` is relative to the manifest's directory.",
        string_or_list,
    ),
    key(
        "devices",
        "Host devices to expose, e.g. `/dev/ttyUSB0` or `/dev/x:/dev/y`.",
        string_or_list,
    ),
    key(
        "persist",
        "Keep the container (stopped) after the job instead of removing it. Default: false.",
        boolean,
    ),
    key(
        "cache",
        "Cache the results of this sandbox's steps (see the manifest's `cache`). Not for a sandbox with network on or host volumes unless `force`. See docs/cache.md.",
        cache_choice,
    ),
    key(
        "pids_limit",
        "Maximum number of processes in the container. Default: 512.",
        || json!({ "type": "integer", "minimum": 1 }),
    ),
    key(
        "tmp",
        "`/tmp` as a tmpfs of this size (its pages count toward `mem`), or `disk` to keep it on the container's writable layer. Default: 128m (a persistent sandbox: disk).",
        || json!({ "type": "string" }),
    ),
    key(
        "read_only",
        "A read-only root filesystem; the working directory and `/tmp` become tmpfs of the `tmp` size. Default: false.",
        boolean,
    ),
    key(
        "no_new_privileges",
        "Processes cannot gain privileges through setuid binaries or file capabilities. `false` relaxes it (say, for `sudo` in an image of your own). Default: true. See docs/security.md.",
        boolean,
    ),
    key(
        "recycle",
        "Let matrix instances reuse the container of an earlier instance, reset to pristine (processes killed; home, `/tmp` and `/dev/shm` wiped) instead of creating one. Implies `read_only: true`; refused with `read_only: false`, `volumes` or `persist`. Default: false. See docs/security.md.",
        boolean,
    ),
    key(
        "disk",
        "Cap the container's writable layer, e.g. `1g`. Refused before anything is created when the engine's storage driver cannot (overlay needs xfs with pquota).",
        || json!({ "type": "string" }),
    ),
    key(
        "matrix",
        "Fan out: one container per combination of the axes' values. Each axis is a list, or a template that renders to a list (`\"{{ vars.students }}\"`).",
        || json!({ "type": "object", "propertyNames": { "pattern": "^[A-Za-z_][A-Za-z0-9_]*$" }, "additionalProperties": {
            "oneOf": [ { "type": "array", "minItems": 1 }, { "type": "string" } ]
        } }),
    ),
];

/// Keys of a `cache_key` item that names a file.
pub(crate) const CACHE_FILE_KEYS: &[KeyDoc] = &[key(
    "file",
    "A host file or directory (a template, relative to the manifest) whose content counts in the step's cache key.",
    template,
)];

/// Keys of one step before its action's.
const STEP_HEAD: &[KeyDoc] = &[
    key(
        "name",
        "Display name (a template). Default: the step id.",
        template,
    ),
    key(
        "sandbox",
        "Id of the sandbox the step runs on. May be left out when the manifest declares exactly one sandbox.",
        || json!({ "type": "string" }),
    ),
];

/// Keys of one step after its action's.
const STEP_TAIL: &[KeyDoc] = &[
    key(
        "with",
        "Values of the recipe's inputs (with `uses`); strings are templates over the caller's `vars`, `env`, `matrix`, `job` and `steps`.",
        || json!({ "type": "object" }),
    ),
    key(
        "needs",
        "Step ids this step waits for (a string or a list). Without `needs`, a step waits for the previous step on the same sandbox.",
        string_or_list,
    ),
    key(
        "if",
        "Condition (a template expression, e.g. `steps.grade.exit_code == 0`); the step is skipped when it is false.",
        || json!({ "type": ["string", "boolean"] }),
    ),
    key(
        "timeout",
        "Time limit of the step: seconds, or a number with ms, s, m or h. Default for `run` and `session`: 30s.",
        duration,
    ),
    key(
        "retries",
        "How many times to retry the step when it fails. Default: 0.",
        || json!({ "type": "integer", "minimum": 0, "maximum": 100 }),
    ),
    key(
        "allow_failure",
        "A failure of this step does not fail the job, and steps that need it still run. Default: false.",
        boolean,
    ),
    key(
        "secrets",
        "Names of the manifest's `secrets` this `run` step receives as environment variables (a string or a list).",
        string_or_list,
    ),
    key(
        "cache",
        "Cache this step's result (see the manifest's `cache`); `false` runs it and every later step of its sandbox; `force` caches it even with network on, host volumes, or as a `session` or `python` step. See docs/cache.md.",
        cache_choice,
    ),
    key(
        "cache_key",
        "More inputs the step's cache key counts: strings (templates), or `{file: PATH}` for a host file or directory whose content counts.",
        || json!({ "oneOf": [
            { "type": "string" },
            { "type": "array", "items": { "oneOf": [ { "type": "string" }, reference("cache_file") ] } }
        ] }),
    ),
    key(
        "limits",
        "What a `run` step's command may use; past any of them the command is stopped and the step fails with the limit's name as its reason: `cpu_time`, `memory`, `output`, `pids`. See docs/security.md.",
        || reference("step_limits"),
    ),
];

/// Keys of one step: its own, with each kind's key in the registry's order.
pub(crate) static STEP_KEYS: LazyLock<Vec<KeyDoc>> = LazyLock::new(|| {
    let kinds = Kind::ALL.iter().map(|k| k.key());
    STEP_HEAD
        .iter()
        .copied()
        .chain(kinds)
        .chain(STEP_TAIL.iter().copied())
        .collect()
});

/// Keys of a step's `limits`.
pub(crate) const STEP_LIMIT_KEYS: &[KeyDoc] = &[
    key(
        "cpu_time",
        "CPU time (user and system) of the command: seconds, or a number with ms, s, m or h. Each process is stopped past it (`RLIMIT_CPU`, whole seconds up); the command's total is checked when it ends.",
        duration,
    ),
    key(
        "memory",
        "Resident memory the command may add to the sandbox, e.g. 64m; its largest process and an OOM kill count too.",
        size,
    ),
    key(
        "output",
        "Output (stdout and stderr together) the command may print, e.g. 1m; it is stopped when it reaches it.",
        size,
    ),
    key(
        "pids",
        "Processes the command may add to the sandbox at once.",
        || json!({ "type": "integer", "minimum": 1, "maximum": 100_000 }),
    ),
];

/// A map a step kind's long form uses: a `$defs` entry of the schema.
#[derive(Debug)]
pub(crate) struct MapForm {
    /// Its name under `$defs`.
    pub def: &'static str,
    /// What it is, for the schema.
    pub description: &'static str,
    /// Its keys.
    pub keys: &'static [KeyDoc],
    /// The keys it requires.
    pub required: &'static [&'static str],
}

/// The required keys of each kind of map.
pub(crate) const REQUIRED: &[(&str, &[&str])] = &[("manifest", &["version"])];

/// Keys of a recipe file (`recipe.yaml` / `recipe.kdl`).
pub(crate) const RECIPE_KEYS: &[KeyDoc] = &[
    key("version", "Recipe language version. Must be 1.", || json!({ "const": 1 })),
    key("description", "What the recipe does, one line for `pocketdock recipe list`.", template),
    key(
        "profile",
        "The profile the using step's sandbox must have (e.g. `embedded`). Default: any.",
        template,
    ),
    key(
        "inputs",
        "What the caller passes with `with:`, by name: `type`, `default`, `required`, `description`.",
        || json!({ "type": "object", "additionalProperties": reference("input") }),
    ),
    key(
        "outputs",
        "What the caller reads as `steps.<step>.outputs.<name>`: a template over the recipe's `inputs`, `matrix`, `job` and `steps`, or a map with `value` and `description`.",
        || json!({ "type": "object", "additionalProperties": { "oneOf": [ { "type": "string" }, reference("output") ] } }),
    ),
    key(
        "steps",
        "The recipe's steps, written as in a manifest but without `sandbox`: they run on the using step's sandbox, named `<step>.<id>`.",
        || json!({ "type": "object", "additionalProperties": reference("step") }),
    ),
];

/// Keys of one recipe input.
pub(crate) const INPUT_KEYS: &[KeyDoc] = &[
    key(
        "type",
        "`string` (default), `number`, `integer`, `boolean`, `list` or `map`.",
        || json!({ "enum": ["string", "number", "integer", "boolean", "list", "map"] }),
    ),
    key("default", "Value when the caller gives none.", || json!({})),
    key(
        "required",
        "The caller must give it. Default: false (an input without a default is then null).",
        boolean,
    ),
    key("description", "What the input means.", template),
];

/// Keys of the map form of one recipe output.
pub(crate) const OUTPUT_KEYS: &[KeyDoc] = &[
    key(
        "value",
        "The value: a template over the recipe's context.",
        template,
    ),
    key("description", "What the output means.", template),
];
