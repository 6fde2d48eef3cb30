//! Keeping skills served from disk in step with it: a poll of modification times on an
//! interval, a skill read and hashed again only when its files changed, and the
//! server's resources changed to match (which the server announces as a resources
//! list change, in both eras).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use modelctx_server::{ResourceDef, Server};

use super::serve::{Current, Registered, Settings, snapshot};
use super::{BuiltSkill, Skill, SkillError, build, disk};

/// A handle on installed skills for keeping them in step with the disk, from
/// [`Skills::watcher`](super::Skills::watcher).
///
/// ```no_run
/// # async fn run() -> Result<(), modelctx_skills::SkillError> {
/// use std::time::Duration;
/// use modelctx_server::Server;
/// use modelctx_skills::{ServerBuilderSkillsExt, Skills};
///
/// let skills = Skills::new().dir("./skills")?;
/// let watcher = skills.watcher();
/// let server = Server::builder("docs", "1.0.0").skills(skills)?.build();
/// // Polls every half second until `watch` is dropped or the server is gone.
/// let watch = watcher.watch(&server, Duration::from_millis(500))?;
/// # drop(watch);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct SkillsWatcher {
    live: Arc<OnceLock<Arc<Live>>>,
}

modelctx_types::__debug_shows!(SkillsWatcher, |v| { installed: &v.live.get().is_some() });

/// A running watch, from [`SkillsWatcher::watch`]: the polling stops when it is
/// dropped, or on its own once the server is gone (every [`Server`] clone dropped and
/// every session it served ended). Keep it for as long as the server serves.
#[derive(Debug)]
#[must_use = "the watch stops when this is dropped"]
pub struct SkillsWatch {
    task: tokio::task::JoinHandle<()>,
}

impl SkillsWatch {
    /// Whether the watch has ended on its own: the server is gone.
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Waits until the watch ends on its own, which it does at its first poll after
    /// the server is gone; never, while the server is in use (bound the wait).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use modelctx_server::Server;
    /// use modelctx_skills::{ServerBuilderSkillsExt, Skill, Skills};
    ///
    /// let skills = Skills::new().skill(
    ///     Skill::new("hello").file("SKILL.md", "---\nname: hello\ndescription: Says hello\n---\n"),
    /// )?;
    /// let watcher = skills.watcher();
    /// let server = Server::builder("docs", "1.0.0").skills(skills)?.build();
    /// let watch = watcher.watch(&server, Duration::from_millis(10))?;
    /// drop(server);
    /// tokio::time::timeout(Duration::from_secs(10), watch.stopped()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn stopped(mut self) {
        // Only this guard aborts the task, and it is held here: the task ends on its own.
        let _ = (&mut self.task).await;
    }
}

impl Drop for SkillsWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl SkillsWatcher {
    pub(super) fn new(live: Arc<OnceLock<Arc<Live>>>) -> Self {
        Self { live }
    }

    /// Polls the skills' directories every `interval` (at least a millisecond) on a
    /// task of the current tokio runtime, and keeps `server` in step: a skill added,
    /// removed or changed on disk is read and hashed again (that skill alone; an
    /// enclosing skill too, since its entry lists the nested skill's files), its
    /// files added to, removed from or replaced in the server's resources (announced
    /// as `notifications/resources/list_changed` to every session, in both eras),
    /// and subscribers of a changed file told with `notifications/resources/updated`.
    /// A skill that fails its checks after a change (a half-written `SKILL.md`, say)
    /// keeps being served as it was until a later poll reads it whole. The
    /// extension defines no list change of its own.
    ///
    /// `server` is the server the skills were installed into; refused when they are
    /// not installed yet. The watch holds it weakly ([`Server::downgrade`]): it ends at
    /// its first poll after the server is gone, or when the [`SkillsWatch`] is
    /// dropped. Must be called within a tokio runtime.
    pub fn watch(&self, server: &Server, interval: Duration) -> Result<SkillsWatch, SkillError> {
        let live = self.live.get().cloned().ok_or_else(|| {
            SkillError::invalid(
                "skills",
                "the skills are not installed in a server yet (install them, then watch)",
            )
        })?;
        let weak = server.downgrade();
        let interval = interval.max(Duration::from_millis(1));
        let task = tokio::spawn(async move {
            let mut ticks = tokio::time::interval(interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            // The first tick is at once; the skills were read just before.
            ticks.tick().await;
            loop {
                ticks.tick().await;
                // Held for this poll only, so that the watch never keeps the server.
                let Some(server) = weak.upgrade() else {
                    return;
                };
                let (scan, to) = (live.clone(), server.clone());
                let Ok(updated) = tokio::task::spawn_blocking(move || scan.update(&to)).await
                else {
                    continue;
                };
                for uri in updated {
                    server.notify_resource_updated(&uri).await;
                }
            }
        });
        Ok(SkillsWatch { task })
    }
}

/// The installed skills as a watch sees them.
pub(crate) struct Live {
    current: Current,
    /// Held while one poll's changes are computed and applied to the server, so that
    /// two watches of the same skills apply theirs in order.
    state: Mutex<State>,
}

modelctx_types::__debug_shows!(Live, |_v| { .. });

struct State {
    skills: BTreeMap<String, BuiltSkill>,
    files: BTreeMap<String, Registered>,
    roots: Vec<PathBuf>,
    settings: Settings,
}

/// What one poll changes in the server's resources.
#[derive(Default)]
struct Changes {
    removed: Vec<String>,
    added: Vec<Registered>,
    /// Served before and after, with other bytes: replaced, and their subscribers told.
    replaced: Vec<Registered>,
}

impl Changes {
    /// Changes `server`'s resources; the URIs whose content changed.
    fn apply(self, server: &Server) -> Vec<String> {
        for uri in &self.removed {
            server.remove_resource(uri);
        }
        let mut updated = Vec::new();
        for registered in &self.replaced {
            server.remove_resource(&registered.file.uri);
            add(server, registered.def());
            updated.push(registered.file.uri.clone());
        }
        for registered in &self.added {
            add(server, registered.def());
        }
        updated
    }
}

/// Adds a skill file as a resource. A URI the application registered a resource at
/// itself stays the application's (refused here, as installing refuses it).
fn add(server: &Server, def: ResourceDef) {
    let _ = server.add_resource(def);
}

impl Live {
    pub(super) fn new(
        current: Current,
        skills: BTreeMap<String, BuiltSkill>,
        files: BTreeMap<String, Registered>,
        roots: Vec<PathBuf>,
        settings: Settings,
    ) -> Self {
        Self {
            current,
            state: Mutex::new(State {
                skills,
                files,
                roots,
                settings,
            }),
        }
    }

    /// Looks at the disk once and brings the served skills and `server`'s resources up
    /// to date; the URIs whose content changed.
    fn update(&self, server: &Server) -> Vec<String> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        Self::rescan(&self.current, &mut state).apply(server)
    }

    /// Looks at the disk once and brings the served skills up to date; what the
    /// server's resources need to change to match.
    fn rescan(current: &Current, state: &mut State) -> Changes {
        let Some(skills) = state.next_skills() else {
            return Changes::default();
        };
        // A snapshot refused (two skills at odds, a limit crossed together) leaves
        // everything as it was, to be tried again at the next poll.
        let Ok(next) = snapshot(&skills, &state.settings) else {
            return Changes::default();
        };
        let mut changes = Changes::default();
        for (uri, before) in &state.files {
            match next.files.get(uri) {
                None => changes.removed.push(uri.clone()),
                Some(after) if before.differs(after) => changes.replaced.push(after.clone()),
                Some(_) => {}
            }
        }
        for (uri, after) in &next.files {
            if !state.files.contains_key(uri) {
                changes.added.push(after.clone());
            }
        }
        *current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(next.served);
        state.skills = skills;
        state.files = next.files;
        changes
    }
}

impl State {
    /// The skills as they are on disk now, or `None` when nothing changed. A skill is
    /// read again only when its fingerprint changed; one that cannot be read or fails
    /// its checks keeps its last good version.
    fn next_skills(&self) -> Option<BTreeMap<String, BuiltSkill>> {
        // Where each skill from disk is now: every skill below a root, and each skill
        // read on its own while its directory is there.
        let mut found: BTreeMap<String, PathBuf> = BTreeMap::new();
        for root in &self.roots {
            // A root that cannot be searched this time (being replaced, say) changes
            // nothing until it can.
            let Ok(skills) = disk::find_skills(root) else {
                return None;
            };
            found.extend(skills);
        }
        let from_roots: BTreeSet<&String> = found.keys().collect();
        let mut on_their_own = Vec::new();
        for (path, skill) in &self.skills {
            if let Some(source) = &skill.disk
                && !from_roots.contains(path)
                && !self.under_a_root(&source.dir)
                && source.dir.is_dir()
            {
                on_their_own.push((path.clone(), source.dir.clone()));
            }
        }
        found.extend(on_their_own);

        let mut changed = false;
        let mut next = BTreeMap::new();
        for (path, skill) in &self.skills {
            if skill.disk.is_none() {
                next.insert(path.clone(), skill.clone());
            } else if !found.contains_key(path) {
                changed = true;
            }
        }
        for (path, dir) in found {
            let old = self.skills.get(&path);
            if old.is_some_and(|s| s.disk.is_none()) {
                // A skill built in code keeps its path.
                continue;
            }
            let fingerprint = disk::fingerprint(&dir).ok();
            let same = old.and_then(|s| s.disk.as_ref()).is_some_and(|source| {
                source.dir == dir && fingerprint.as_ref() == Some(&source.fingerprint)
            });
            if same {
                next.insert(path, old.expect("compared").clone());
                continue;
            }
            let listed = old.is_none_or(|s| s.listed);
            let read = Skill::from_dir(path.clone(), &dir).and_then(|mut skill| {
                skill.listed = listed;
                build(skill)
            });
            match (read, old) {
                (Ok(built), _) => {
                    changed = true;
                    next.insert(path, built);
                }
                (Err(_), Some(old)) => {
                    next.insert(path, old.clone());
                }
                (Err(_), None) => {}
            }
        }
        changed.then_some(next)
    }

    fn under_a_root(&self, dir: &std::path::Path) -> bool {
        self.roots.iter().any(|root| dir.starts_with(root))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::Skills;

    fn md(name: &str) -> String {
        format!("---\nname: {name}\ndescription: A skill\n---\nBody\n")
    }

    #[test]
    fn only_the_changed_skill_is_read_and_hashed_again() {
        let root =
            std::env::temp_dir().join(format!("modelctx-skills-rescan-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (path, text) in [
            ("alpha/SKILL.md", md("alpha")),
            ("alpha/notes.md", "one".to_owned()),
            ("beta/SKILL.md", md("beta")),
        ] {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let skills = Skills::new().dir(&root).unwrap();
        let live_slot = skills.live.clone();
        let _builder = skills.install(Server::builder("s", "1")).unwrap();
        let live = live_slot.get().unwrap().clone();
        let files_of = |path: &str| {
            let state = live.state.lock().unwrap();
            state.skills[path].files.clone()
        };
        let (alpha, beta) = (files_of("alpha"), files_of("beta"));

        // Nothing changed: nothing to do.
        let rescan = || Live::rescan(&live.current, &mut live.state.lock().unwrap());
        let none = rescan();
        assert!(none.removed.is_empty() && none.added.is_empty() && none.replaced.is_empty());

        std::fs::write(root.join("alpha/notes.md"), "one and two").unwrap();
        let changes = rescan();
        let replaced: Vec<&str> = changes
            .replaced
            .iter()
            .map(|r| r.file.uri.as_str())
            .collect();
        assert_eq!(replaced, ["skill://alpha/notes.md"]);
        assert!(changes.removed.is_empty() && changes.added.is_empty());
        // beta was neither read nor hashed again: the very same files.
        let beta_now = files_of("beta");
        assert!(beta.iter().zip(&beta_now).all(|(a, b)| Arc::ptr_eq(a, b)));
        let alpha_now = files_of("alpha");
        let notes = alpha_now.iter().find(|f| f.relative == "notes.md").unwrap();
        assert_eq!(notes.digest, crate::digest(b"one and two"));
        assert!(!Arc::ptr_eq(&alpha[1], notes));

        std::fs::remove_dir_all(root.join("beta")).unwrap();
        let changes = rescan();
        assert_eq!(changes.removed, ["skill://beta/SKILL.md"]);
        let _ = std::fs::remove_dir_all(&root);
    }
}
