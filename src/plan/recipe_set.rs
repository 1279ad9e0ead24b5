//! Where `uses: NAME` finds its recipe: `./path` relative to the manifest,
//! then the project's `.pocketdock/recipes/NAME/`, then the recipes shipped
//! in the binary (`recipes/` of the source tree, so `uses: stm32` works from
//! any directory).
//!
//! Like [`super::ProfileSet`], the set is made once by the caller for its
//! project and handed to the plan; files are read when a recipe is used.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::diag::suggest::did_you_mean;
use crate::manifest::{self, Diagnostic, Format, ManifestError, RecipeDecl, Source, Spanned};
use crate::project::Project;

/// The recipes built into pocketdock: (name, `recipe.yaml` text).
pub const SHIPPED_RECIPES: &[(&str, &str)] = &[
    (
        "grading-python",
        include_str!("../../recipes/grading-python/recipe.yaml"),
    ),
    ("stm32", include_str!("../../recipes/stm32/recipe.yaml")),
    (
        "qemu-arm",
        include_str!("../../recipes/qemu-arm/recipe.yaml"),
    ),
    ("arduino", include_str!("../../recipes/arduino/recipe.yaml")),
    ("esp32", include_str!("../../recipes/esp32/recipe.yaml")),
];

/// Where a recipe came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecipeOrigin {
    /// Built into pocketdock.
    Shipped,
    /// A directory: the project's `.pocketdock/recipes/NAME/` or a `./path`.
    Dir(PathBuf),
}

/// A recipe found by name, decoded.
#[derive(Debug, Clone)]
pub struct FoundRecipe {
    /// Its name: the directory's name, or the shipped name.
    pub name: String,
    /// Where it came from.
    pub origin: RecipeOrigin,
    /// The recipe.
    pub decl: Arc<RecipeDecl>,
}

/// The recipes a manifest can use.
#[derive(Debug, Clone, Default)]
pub struct RecipeSet {
    /// The project's `.pocketdock/recipes/`, when there is a project.
    project_dir: Option<PathBuf>,
}

impl RecipeSet {
    /// The shipped recipes and those of `project`.
    #[must_use]
    pub fn of_project(project: &Project) -> RecipeSet {
        RecipeSet {
            project_dir: Some(project.root.join(".pocketdock").join("recipes")),
        }
    }

    /// Names of every recipe the set knows (project ones first, then
    /// shipped ones a project recipe does not shadow), sorted within each.
    #[must_use]
    pub fn names(&self) -> Vec<(String, RecipeOrigin)> {
        let mut out: Vec<(String, RecipeOrigin)> = Vec::new();
        if let Some(dir) = &self.project_dir {
            if let Ok(entries) = std::fs::read_dir(dir) {
                let mut names: Vec<(String, RecipeOrigin)> = entries
                    .flatten()
                    .filter(|e| recipe_file(&e.path()).is_some())
                    .map(|e| {
                        (
                            e.file_name().to_string_lossy().into_owned(),
                            RecipeOrigin::Dir(e.path()),
                        )
                    })
                    .collect();
                names.sort_by(|a, b| a.0.cmp(&b.0));
                out.extend(names);
            }
        }
        let mut shipped: Vec<&str> = SHIPPED_RECIPES.iter().map(|(n, _)| *n).collect();
        shipped.sort_unstable();
        for n in shipped {
            if !out.iter().any(|(m, _)| m == n) {
                out.push((n.to_string(), RecipeOrigin::Shipped));
            }
        }
        out
    }

    /// Find and decode the recipe `uses` names, for a manifest in `base_dir`
    /// (`source` is the using manifest, for a name that finds nothing).
    pub fn find(
        &self,
        uses: &Spanned<String>,
        base_dir: &Path,
        source: &Source,
    ) -> Result<FoundRecipe, ManifestError> {
        let name = uses.value.as_str();
        let not_found = |message: String, hint: String| {
            ManifestError::Invalid(vec![Diagnostic::new(source, uses.span, message).hint(hint)])
        };
        if name.starts_with("./") || name.starts_with("../") || name.starts_with('/') {
            let dir: PathBuf = base_dir
                .join(name)
                .components()
                .filter(|c| !matches!(c, std::path::Component::CurDir))
                .collect();
            let Some(file) = recipe_file(&dir) else {
                return Err(not_found(
                    format!("no recipe at `{name}`"),
                    format!(
                        "a recipe is a directory holding `recipe.yaml` or `recipe.kdl`; looked in {}",
                        dir.display()
                    ),
                ));
            };
            return read(&file, dir_name(&dir), RecipeOrigin::Dir(dir.clone()));
        }
        if let Some(dir) = self.project_dir.as_ref().map(|d| d.join(name)) {
            if let Some(file) = recipe_file(&dir) {
                return read(&file, name.to_string(), RecipeOrigin::Dir(dir));
            }
        }
        if let Some((n, text)) = SHIPPED_RECIPES.iter().find(|(n, _)| *n == name) {
            return shipped(n, text);
        }
        let names: Vec<String> = self.names().into_iter().map(|(n, _)| n).collect();
        let hint = match did_you_mean(name, names.iter().map(String::as_str)) {
            Some(s) => format!("did you mean `{s}`?"),
            None => format!(
                "known recipes: {}; a project recipe lives in `.pocketdock/recipes/{name}/recipe.yaml`, a local one is `uses: ./path`",
                names.join(", ")
            ),
        };
        Err(not_found(format!("unknown recipe `{name}`"), hint))
    }

    /// A recipe by name, for `pocketdock recipe show` (no manifest).
    pub fn by_name(&self, name: &str, base_dir: &Path) -> Result<FoundRecipe, ManifestError> {
        let source = Source::new("<command line>", name);
        let uses = Spanned::new(name.to_string(), crate::diag::Span::new(0, name.len()));
        self.find(&uses, base_dir, &source)
    }
}

/// A shipped recipe, decoded (a shipped recipe that does not decode is a
/// bug the tests catch; it is still reported, not a panic).
fn shipped(name: &str, text: &str) -> Result<FoundRecipe, ManifestError> {
    let path = PathBuf::from(format!("recipes/{name}/recipe.yaml"));
    let decl = manifest::parse_recipe(&path, text, Format::Yaml)?;
    Ok(FoundRecipe {
        name: name.to_string(),
        origin: RecipeOrigin::Shipped,
        decl: Arc::new(decl),
    })
}

fn read(file: &Path, name: String, origin: RecipeOrigin) -> Result<FoundRecipe, ManifestError> {
    let text = std::fs::read_to_string(file).map_err(|source| ManifestError::Read {
        path: file.to_path_buf(),
        source,
    })?;
    let decl = manifest::parse_recipe(file, &text, Format::of(file))?;
    Ok(FoundRecipe {
        name,
        origin,
        decl: Arc::new(decl),
    })
}

/// `recipe.yaml` (or `.yml`, or `recipe.kdl`) in `dir`.
fn recipe_file(dir: &Path) -> Option<PathBuf> {
    ["recipe.yaml", "recipe.yml", "recipe.kdl"]
        .iter()
        .map(|f| dir.join(f))
        .find(|p| p.is_file())
}

fn dir_name(dir: &Path) -> String {
    std::path::absolute(dir)
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| dir.display().to_string())
}
