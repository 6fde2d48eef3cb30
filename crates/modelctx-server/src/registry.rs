//! The registries of the high-level server (tools, resources, templates, prompts),
//! changeable while clients are connected, and the debounced `list_changed`
//! announcements to every live session (and, through an [`AnnouncementBus`], to the
//! sessions of other processes).
//!
//! Registries are maps of identifier to `Arc<Registered*>`, one map type for the four
//! kinds: schemas are generated and compiled once, at registration; a request clones an
//! `Arc` out and no lock is held across an await.
//!
//! The server keeps weak references to its live sessions ([`Announcer`], a map by a number
//! each session gets). A session's entry goes when its service is dropped (its `Place` in
//! the session's service), so an ended session's state is freed at once; the map and the
//! listeners' list give their room back as they drain. Trap: dropping a session's
//! `Place` takes the announcer's session lock, so nothing that may drop a session's
//! service runs under it (the lock covers only the map; `Announcer::live` upgrades
//! under it and filters after).
//!
//! A registry change sets a pending flag per kind, and one task sends a single
//! `list_changed` per kind to every live session after the debounce window, only for kinds
//! that advertised `listChanged`. With `ServerBuilder::announcements` the kinds changed
//! here are also published once per window (resource updates at once), and other processes'
//! announcements are delivered here and never published again, so two processes do not echo
//! them between them. Without a bus nothing else happens.
//!
//! `subscriptions/listen` (2026-07-28): the request's own stream carries the
//! acknowledgement, then the changes its filter asks for ([`Announcer`] keeps listeners
//! beside sessions), each tagged with the subscription id (the request id), until the
//! client closes the stream (cancellation) or a send fails.

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use modelctx_session::announce::{Announcement, AnnouncementBus, AnnouncementReceiver};
use modelctx_store::table::shrink_drained;
use modelctx_types::{
    Cursor, ErrorData, PromptListChangedNotification, ResourceListChangedNotification,
    ResourceUpdatedNotification, ResourceUpdatedNotificationParams, SubscriptionFilter, Tool,
    ToolListChangedNotification,
};

use crate::prompt::{PromptDef, RegisteredPrompt};
use crate::resource::{RegisteredResource, RegisteredTemplate, ResourceDef, TemplateDef};
use crate::session::SessionState;
use crate::tool::{RegisteredTool, ToolDef};

/// Why a tool, resource, template or prompt was refused at registration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistrationError {
    kind: RegistrationErrorKind,
    message: String,
}

/// Which rule a [`RegistrationError`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RegistrationErrorKind {
    /// The name (or URI, or URI template) is already in use.
    Duplicate,
    /// The definition breaks a rule.
    Invalid,
}

impl RegistrationError {
    fn duplicate(what: &str, id: &str) -> Self {
        Self {
            kind: RegistrationErrorKind::Duplicate,
            message: format!("{what} {id:?} is already registered"),
        }
    }

    fn invalid(message: String) -> Self {
        Self {
            kind: RegistrationErrorKind::Invalid,
            message,
        }
    }

    /// Which rule was broken.
    pub fn kind(&self) -> RegistrationErrorKind {
        self.kind
    }

    /// The name (or URI, or URI template) is already in use.
    pub fn is_duplicate(&self) -> bool {
        self.kind == RegistrationErrorKind::Duplicate
    }

    /// The definition breaks a rule: a tool name outside `[A-Za-z0-9_.-]{1,128}`, a
    /// schema that does not compile or does not describe an object, a malformed URI
    /// template, ...
    pub fn is_invalid(&self) -> bool {
        self.kind == RegistrationErrorKind::Invalid
    }
}

impl fmt::Display for RegistrationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RegistrationError {}

/// The kinds of list a client can be told changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListKind {
    Tools = 0,
    Resources = 1,
    Prompts = 2,
}

/// Tools, resources, templates and prompts, each keyed by its identifier and listed in
/// identifier order. Entries are shared (`Arc`): a request clones what it needs and
/// never holds a lock across an await.
///
/// A registration a handle disabled waits in `parked` (no request sees it) until it is
/// enabled again; its identifier stays taken.
#[derive(Default)]
pub(crate) struct Registry {
    pub(crate) tools: Live<RegisteredTool>,
    pub(crate) resources: Live<RegisteredResource>,
    pub(crate) templates: Live<RegisteredTemplate>,
    pub(crate) prompts: Live<RegisteredPrompt>,
    parked: Parked,
}

/// The disabled registrations of each kind.
#[derive(Default)]
struct Parked {
    tools: Held,
    resources: Held,
    templates: Held,
    prompts: Held,
}

/// An entry of any kind. Every kind is kept in the same map type, so the map's code is
/// compiled once rather than once per kind; [`lookup`] and [`snapshot`] hand the entries
/// back typed (each map holds one kind only, so the downcast always succeeds).
type Erased = Arc<dyn Any + Send + Sync>;
type Map = BTreeMap<String, Erased>;
type Held = Mutex<Map>;

/// The enabled registrations of one kind.
pub(crate) struct Live<T> {
    map: RwLock<Map>,
    kind: PhantomData<fn() -> T>,
}

impl<T> Default for Live<T> {
    fn default() -> Self {
        Self {
            map: RwLock::default(),
            kind: PhantomData,
        }
    }
}

/// A kind of registration: how it is built from its definition, named, kept and
/// announced.
pub(crate) trait Entry: Sized + Send + Sync + 'static {
    /// What the application registers.
    type Def;
    /// How errors name it.
    const WHAT: &'static str;
    /// The list a change to it changes.
    const LIST: ListKind;
    fn build(def: Self::Def) -> Result<Self, String>;
    fn id(&self) -> &str;
    fn slots(registry: &Registry) -> (&Live<Self>, &Held);
}

macro_rules! entry {
    ($entry:ty, $def:ty, $what:literal, $list:ident, $field:ident, |$e:ident| $id:expr) => {
        impl Entry for $entry {
            type Def = $def;
            const WHAT: &'static str = $what;
            const LIST: ListKind = ListKind::$list;
            fn build(def: $def) -> Result<Self, String> {
                <$entry>::new(def)
            }
            fn id(&self) -> &str {
                let $e = self;
                $id
            }
            fn slots(registry: &Registry) -> (&Live<Self>, &Held) {
                (&registry.$field, &registry.parked.$field)
            }
        }
    };
}

entry!(RegisteredTool, ToolDef, "tool", Tools, tools, |e| &e
    .tool
    .name);
entry!(
    RegisteredResource,
    ResourceDef,
    "resource",
    Resources,
    resources,
    |e| &e.resource.uri
);
entry!(
    RegisteredTemplate,
    TemplateDef,
    "resource template",
    Resources,
    templates,
    |e| &e.template.uri_template
);
entry!(
    RegisteredPrompt,
    PromptDef,
    "prompt",
    Prompts,
    prompts,
    |e| &e.prompt.name
);

fn held(map: &Held) -> std::sync::MutexGuard<'_, Map> {
    map.lock().unwrap_or_else(|p| p.into_inner())
}

fn read(map: &RwLock<Map>) -> std::sync::RwLockReadGuard<'_, Map> {
    map.read().unwrap_or_else(|p| p.into_inner())
}

fn write(map: &RwLock<Map>) -> std::sync::RwLockWriteGuard<'_, Map> {
    map.write().unwrap_or_else(|p| p.into_inner())
}

/// The maps of `E`'s kind: the enabled and the disabled.
fn slots<E: Entry>(registry: &Registry) -> (&RwLock<Map>, &Held) {
    let (live, parked) = E::slots(registry);
    (&live.map, parked)
}

fn insert(
    live: &RwLock<Map>,
    parked: &Held,
    what: &str,
    id: String,
    entry: Erased,
) -> Result<(), RegistrationError> {
    let parked = held(parked);
    let mut map = write(live);
    if map.contains_key(&id) || parked.contains_key(&id) {
        return Err(RegistrationError::duplicate(what, &id));
    }
    map.insert(id, entry);
    Ok(())
}

/// Removes the registration `id`, enabled or not.
fn remove(live: &RwLock<Map>, parked: &Held, id: &str) -> bool {
    let parked = held(parked).remove(id).is_some();
    let live = write(live).remove(id).is_some();
    live || parked
}

/// Whether `id` is enabled (`Some(true)`), disabled (`Some(false)`), or not registered.
fn state(live: &RwLock<Map>, parked: &Held, id: &str) -> Option<bool> {
    let parked = held(parked);
    if read(live).contains_key(id) {
        return Some(true);
    }
    parked.contains_key(id).then_some(false)
}

/// Moves `id` between the enabled and the disabled; whether it moved.
fn set_enabled(live: &RwLock<Map>, parked: &Held, id: &str, enabled: bool) -> bool {
    let mut parked = held(parked);
    let mut live = write(live);
    let (from, to) = if enabled {
        (&mut *parked, &mut *live)
    } else {
        (&mut *live, &mut *parked)
    };
    match from.remove(id) {
        Some(entry) => {
            to.insert(id.to_owned(), entry);
            true
        }
        None => false,
    }
}

/// Replaces `id` with `entry` (identified by `new_id`), in the state `id` was in.
fn replace(
    live: &RwLock<Map>,
    parked: &Held,
    what: &str,
    id: &str,
    new_id: String,
    entry: Erased,
) -> Result<String, RegistrationError> {
    let mut parked = held(parked);
    let mut live = write(live);
    if new_id != id && (live.contains_key(&new_id) || parked.contains_key(&new_id)) {
        return Err(RegistrationError::duplicate(what, &new_id));
    }
    let home = if live.remove(id).is_some() {
        &mut *live
    } else if parked.remove(id).is_some() {
        &mut *parked
    } else {
        return Err(RegistrationError::invalid(format!(
            "{what} {id:?} is no longer registered"
        )));
    };
    home.insert(new_id.clone(), entry);
    Ok(new_id)
}

impl Registry {
    /// Registers `def`.
    pub(crate) fn add<E: Entry>(&self, def: E::Def) -> Result<String, RegistrationError> {
        let entry = E::build(def).map_err(RegistrationError::invalid)?;
        let id = entry.id().to_owned();
        let (live, parked) = slots::<E>(self);
        insert(live, parked, E::WHAT, id.clone(), Arc::new(entry))?;
        Ok(id)
    }

    /// Removes the registration `id`, enabled or not; whether there was one.
    pub(crate) fn discard<E: Entry>(&self, id: &str) -> bool {
        let (live, parked) = slots::<E>(self);
        remove(live, parked, id)
    }

    /// Whether `id` is registered and enabled (`Some(true)`), disabled
    /// (`Some(false)`), or not registered.
    pub(crate) fn state<E: Entry>(&self, id: &str) -> Option<bool> {
        let (live, parked) = slots::<E>(self);
        state(live, parked, id)
    }

    /// Moves the registration `id` between the enabled and the disabled; whether it
    /// moved (it exists and was in the other state).
    pub(crate) fn set_enabled<E: Entry>(&self, id: &str, enabled: bool) -> bool {
        let (live, parked) = slots::<E>(self);
        set_enabled(live, parked, id, enabled)
    }

    /// Replaces the registration `id` with `def`, in the state it was in; returns the
    /// new identifier (`def`'s, which may differ).
    pub(crate) fn replace<E: Entry>(
        &self,
        id: &str,
        def: E::Def,
    ) -> Result<String, RegistrationError> {
        let entry = E::build(def).map_err(RegistrationError::invalid)?;
        let new_id = entry.id().to_owned();
        let (live, parked) = slots::<E>(self);
        replace(live, parked, E::WHAT, id, new_id, Arc::new(entry))
    }
}

/// An entry of `T`'s map as a `T` (the map holds `T`s only).
fn typed<T: Send + Sync + 'static>(entry: &Erased) -> Option<Arc<T>> {
    Arc::clone(entry).downcast::<T>().ok()
}

/// A snapshot of a registry's entries.
pub(crate) fn snapshot<T: Send + Sync + 'static>(map: &Live<T>) -> Vec<Arc<T>> {
    read(&map.map).values().filter_map(typed).collect()
}

/// The number of a registry's entries.
pub(crate) fn count<T>(map: &Live<T>) -> usize {
    read(&map.map).len()
}

/// Whether some entry of a registry passes `test` (no entry is cloned).
pub(crate) fn any<T: Send + Sync + 'static>(map: &Live<T>, test: impl Fn(&T) -> bool) -> bool {
    read(&map.map)
        .values()
        .filter_map(|entry| entry.downcast_ref::<T>())
        .any(test)
}

/// One entry by identifier.
pub(crate) fn lookup<T: Send + Sync + 'static>(map: &Live<T>, id: &str) -> Option<Arc<T>> {
    read(&map.map).get(id).and_then(typed)
}

impl Registry {
    pub(crate) fn add_tool(&self, def: ToolDef) -> Result<(), RegistrationError> {
        self.add::<RegisteredTool>(def).map(drop)
    }

    pub(crate) fn tool(&self, name: &str) -> Option<Tool> {
        lookup(&self.tools, name).map(|t| t.tool.clone())
    }

    pub(crate) fn add_resource(&self, def: ResourceDef) -> Result<(), RegistrationError> {
        self.add::<RegisteredResource>(def).map(drop)
    }

    pub(crate) fn add_template(&self, def: TemplateDef) -> Result<(), RegistrationError> {
        self.add::<RegisteredTemplate>(def).map(drop)
    }

    pub(crate) fn add_prompt(&self, def: PromptDef) -> Result<(), RegistrationError> {
        self.add::<RegisteredPrompt>(def).map(drop)
    }

    pub(crate) fn has_completions(&self) -> bool {
        snapshot(&self.prompts)
            .iter()
            .any(|p| !p.completions.is_empty())
            || snapshot(&self.templates)
                .iter()
                .any(|t| !t.completions.is_empty())
    }
}

/// One page of `items` starting at the opaque `cursor`, and the cursor of the next page
/// (none on the last). A cursor this server did not issue for this list is `-32602`.
pub(crate) fn page<T>(
    items: Vec<T>,
    cursor: Option<&Cursor>,
    size: usize,
    list: &str,
) -> Result<(Vec<T>, Option<Cursor>), ErrorData> {
    let start = match cursor {
        None => 0,
        Some(cursor) => decode_cursor(&cursor.0, list)
            .filter(|&offset| offset <= items.len())
            .ok_or_else(|| ErrorData::invalid_params(format!("Invalid cursor for {list}")))?,
    };
    let size = size.max(1);
    let end = start.saturating_add(size).min(items.len());
    let next = (end < items.len()).then(|| Cursor(encode_cursor(end, list)));
    let page = items.into_iter().skip(start).take(end - start).collect();
    Ok((page, next))
}

fn encode_cursor(offset: usize, list: &str) -> String {
    crate::base64::encode(format!("{list}#{offset}").as_bytes())
}

fn decode_cursor(cursor: &str, list: &str) -> Option<usize> {
    let bytes = crate::base64::decode(cursor)?;
    let text = String::from_utf8(bytes).ok()?;
    let (name, offset) = text.rsplit_once('#')?;
    if name != list || offset.starts_with('+') {
        return None;
    }
    offset.parse().ok()
}

/// What a `subscriptions/listen` stream (protocol 2026-07-28) is told.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Change {
    /// A list changed.
    List(ListKind),
    /// A resource changed.
    Resource(String),
}

/// One open `subscriptions/listen` stream: what it asked for, where its changes go.
struct Listener {
    id: u64,
    filter: SubscriptionFilter,
    tx: tokio::sync::mpsc::UnboundedSender<Change>,
}

impl Listener {
    fn wants(&self, change: &Change) -> bool {
        let on = |flag: Option<bool>| flag == Some(true);
        match change {
            Change::List(ListKind::Tools) => on(self.filter.tools_list_changed),
            Change::List(ListKind::Prompts) => on(self.filter.prompts_list_changed),
            Change::List(ListKind::Resources) => on(self.filter.resources_list_changed),
            Change::Resource(uri) => self
                .filter
                .resource_subscriptions
                .as_ref()
                .is_some_and(|uris| uris.iter().any(|u| u == uri)),
        }
    }
}

/// A place in the [`Announcer`] (a session it counts, a `subscriptions/listen` stream it
/// tells): dropping it takes the place out with `leave` (which takes the lock of the
/// announcer's list of such places: never drop one under that lock).
pub(crate) struct Place {
    announcer: Weak<Announcer>,
    key: u64,
    leave: fn(&Announcer, u64),
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Some(announcer) = self.announcer.upgrade() {
            (self.leave)(&announcer, self.key);
        }
    }
}

/// The live sessions, the open `subscriptions/listen` streams, and the pending
/// `list_changed` announcements.
pub(crate) struct Announcer {
    sessions: Mutex<Tracked>,
    listeners: Mutex<Vec<Listener>>,
    next_listener: std::sync::atomic::AtomicU64,
    /// How many `subscriptions/listen` streams may be open at once (`usize::MAX`: no
    /// limit).
    listen_limit: std::sync::atomic::AtomicUsize,
    pending: Mutex<Pending>,
    debounce: Duration,
    /// Which kinds advertise `listChanged: true` (tools, resources, prompts).
    enabled: [bool; 3],
    /// The runtime sessions were served on, for changes made outside of it.
    runtime: std::sync::OnceLock<tokio::runtime::Handle>,
    /// Where this process's changes are published, and what the bus hands other
    /// processes' changes to (it holds a weak reference); none on a single process.
    bus: Option<(Arc<dyn AnnouncementBus>, Arc<Remote>)>,
}

/// Receives other processes' announcements from the bus for an [`Announcer`].
struct Remote(Weak<Announcer>);

impl AnnouncementReceiver for Remote {
    fn receive(&self, announcement: Announcement) {
        let Some(announcer) = self.0.upgrade() else {
            return;
        };
        let kind = match announcement {
            Announcement::ToolsListChanged => ListKind::Tools,
            Announcement::ResourcesListChanged => ListKind::Resources,
            Announcement::PromptsListChanged => ListKind::Prompts,
            Announcement::ResourceUpdated(uri) => {
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    runtime.spawn(async move { announcer.deliver_resource_updated(&uri).await });
                }
                return;
            }
            // A kind this version does not know.
            _ => return,
        };
        announcer.note(kind, false);
    }
}

/// The sessions being served, each under the number [`Announcer::track`] gave it. A
/// session leaves when its [`Place`] is dropped, with the session's service: a
/// `Weak` left behind would keep the ended session's whole allocation (some 800
/// bytes), and a list pruned only now and then kept up to one such block per session
/// opened since, scattered through the heap (the soak measured it: every session of a
/// round still held after the round).
#[derive(Default)]
struct Tracked {
    next: u64,
    sessions: foldhash::HashMap<u64, Weak<SessionState>>,
}

#[derive(Default)]
struct Pending {
    kinds: [bool; 3],
    /// The kinds among `kinds` changed in this process (published after the window).
    local: [bool; 3],
    scheduled: bool,
}

impl Announcer {
    pub(crate) fn new(
        debounce: Duration,
        enabled: [bool; 3],
        bus: Option<Arc<dyn AnnouncementBus>>,
    ) -> Arc<Self> {
        Arc::new_cyclic(|this| {
            let bus = bus.map(|bus| {
                let remote = Arc::new(Remote(this.clone()));
                let receiver: Arc<dyn AnnouncementReceiver> = remote.clone();
                bus.subscribe(Arc::downgrade(&receiver));
                (bus, remote)
            });
            Self {
                sessions: Mutex::new(Tracked::default()),
                listeners: Mutex::new(Vec::new()),
                next_listener: std::sync::atomic::AtomicU64::new(0),
                listen_limit: std::sync::atomic::AtomicUsize::new(usize::MAX),
                pending: Mutex::new(Pending::default()),
                debounce,
                enabled,
                runtime: std::sync::OnceLock::new(),
                bus,
            }
        })
    }

    /// Counts `session` among the live ones until the returned [`Place`] is dropped.
    pub(crate) fn track(self: &Arc<Self>, session: &Arc<SessionState>) -> Place {
        if self.runtime.get().is_none()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let _ = self.runtime.set(runtime);
        }
        let mut tracked = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        let key = tracked.next;
        tracked.next += 1;
        tracked.sessions.insert(key, Arc::downgrade(session));
        Place {
            announcer: Arc::downgrade(self),
            key,
            leave: Self::untrack,
        }
    }

    /// Takes the session counted under `key` out.
    fn untrack(&self, key: u64) {
        let mut tracked = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        tracked.sessions.remove(&key);
        shrink_drained(&mut tracked.sessions);
    }

    /// At most `limit` `subscriptions/listen` streams open at once.
    pub(crate) fn limit_listeners(&self, limit: usize) {
        self.listen_limit
            .store(limit, std::sync::atomic::Ordering::Relaxed);
    }

    /// Opens a `subscriptions/listen` stream: the changes `filter` asks for go to `tx`
    /// until the returned guard is dropped. `None` when the limit of open streams is
    /// reached.
    pub(crate) fn listen(
        self: &Arc<Self>,
        filter: SubscriptionFilter,
        tx: tokio::sync::mpsc::UnboundedSender<Change>,
    ) -> Option<Place> {
        if self.runtime.get().is_none()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let _ = self.runtime.set(runtime);
        }
        let id = self
            .next_listener
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut listeners = self.listeners.lock().unwrap_or_else(|p| p.into_inner());
        if listeners.len() >= self.listen_limit.load(std::sync::atomic::Ordering::Relaxed) {
            return None;
        }
        listeners.push(Listener { id, filter, tx });
        Some(Place {
            announcer: Arc::downgrade(self),
            key: id,
            leave: Self::unlisten,
        })
    }

    /// Takes listener `id` out (its stream ended).
    fn unlisten(&self, id: u64) {
        let mut listeners = self.listeners.lock().unwrap_or_else(|p| p.into_inner());
        listeners.retain(|l| l.id != id);
        shrink_drained(&mut *listeners);
    }

    /// Ends every open `subscriptions/listen` stream: each gets no more changes, and is
    /// answered once those already sent to it are delivered. Returns how many there were.
    pub(crate) fn end_listeners(&self) -> usize {
        let mut listeners = self.listeners.lock().unwrap_or_else(|p| p.into_inner());
        let ended = listeners.len();
        listeners.clear();
        ended
    }

    /// Tells every listener that asked for `change`; returns how many were told.
    fn tell(&self, change: &Change) -> usize {
        let listeners = self.listeners.lock().unwrap_or_else(|p| p.into_inner());
        listeners
            .iter()
            .filter(|l| l.wants(change) && l.tx.send(change.clone()).is_ok())
            .count()
    }

    /// The open sessions.
    pub(crate) fn live(&self) -> Vec<Arc<SessionState>> {
        let mut sessions: Vec<_> = {
            let tracked = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
            tracked
                .sessions
                .values()
                .filter_map(Weak::upgrade)
                .collect()
        };
        // The lock covers only the map (dropping a session's `Place` takes it too).
        sessions.retain(|s| !is_closed(s));
        sessions
    }

    /// Notes that a list changed; one announcement per kind goes to every live session
    /// after the debounce window, however many changes the window saw (and, with a
    /// bus, to the other processes).
    pub(crate) fn changed(self: &Arc<Self>, kind: ListKind) {
        self.note(kind, true);
    }

    /// Notes a list change made here (`local`) or heard from another process.
    fn note(self: &Arc<Self>, kind: ListKind, local: bool) {
        if !self.enabled[kind as usize] {
            return;
        }
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending.kinds[kind as usize] = true;
        if local && self.bus.is_some() {
            pending.local[kind as usize] = true;
        }
        if pending.scheduled {
            return;
        }
        let runtime = tokio::runtime::Handle::try_current()
            .ok()
            .or_else(|| self.runtime.get().cloned());
        let Some(runtime) = runtime else {
            // No session was ever served here and no runtime is at hand: nobody here
            // to announce to, but other processes still hear of the change.
            let local = std::mem::take(&mut pending.local);
            pending.kinds = [false; 3];
            drop(pending);
            self.publish(local);
            return;
        };
        pending.scheduled = true;
        drop(pending);
        let this = self.clone();
        runtime.spawn(async move {
            tokio::time::sleep(this.debounce).await;
            let (kinds, local) = {
                let mut pending = this.pending.lock().unwrap_or_else(|p| p.into_inner());
                pending.scheduled = false;
                (
                    std::mem::take(&mut pending.kinds),
                    std::mem::take(&mut pending.local),
                )
            };
            this.publish(local);
            for kind in [ListKind::Tools, ListKind::Resources, ListKind::Prompts] {
                if kinds[kind as usize] {
                    this.tell(&Change::List(kind));
                }
            }
            for session in this.live() {
                let Some(peer) = session.live_peer() else {
                    continue;
                };
                // A session that closed meanwhile just misses the announcement.
                if kinds[ListKind::Tools as usize] {
                    let _ = peer.notify::<ToolListChangedNotification>(None).await;
                }
                if kinds[ListKind::Resources as usize] {
                    let _ = peer.notify::<ResourceListChangedNotification>(None).await;
                }
                if kinds[ListKind::Prompts as usize] {
                    let _ = peer.notify::<PromptListChangedNotification>(None).await;
                }
            }
        });
    }

    /// Publishes the list changes this process made (one per kind) on the bus.
    fn publish(&self, kinds: [bool; 3]) {
        let Some((bus, _)) = &self.bus else {
            return;
        };
        for (kind, announcement) in [
            (ListKind::Tools, Announcement::ToolsListChanged),
            (ListKind::Resources, Announcement::ResourcesListChanged),
            (ListKind::Prompts, Announcement::PromptsListChanged),
        ] {
            if kinds[kind as usize] {
                bus.publish(announcement);
            }
        }
    }

    /// Sends `notifications/resources/updated` to every session and listener of this
    /// process subscribed to `uri`, and publishes the update to the other processes;
    /// returns how many were told here.
    pub(crate) async fn resource_updated(&self, uri: &str) -> usize {
        if let Some((bus, _)) = &self.bus {
            bus.publish(Announcement::ResourceUpdated(uri.to_owned()));
        }
        self.deliver_resource_updated(uri).await
    }

    /// Tells this process's sessions and listeners subscribed to `uri`. A session
    /// shared by several services of this process has a copy in each (only the one
    /// holding its stream delivers): it counts once.
    async fn deliver_resource_updated(&self, uri: &str) -> usize {
        let mut told = self.tell(&Change::Resource(uri.to_owned()));
        let mut shared_told: Vec<Arc<str>> = Vec::new();
        for session in self.live() {
            if !session.is_subscribed(uri) {
                continue;
            }
            if let Some(peer) = session.live_peer() {
                let params = ResourceUpdatedNotificationParams::new(uri);
                if peer
                    .notify::<ResourceUpdatedNotification>(params)
                    .await
                    .is_ok()
                {
                    match session.shared_identity() {
                        Some(id) if shared_told.contains(&id) => {}
                        Some(id) => {
                            shared_told.push(id);
                            told += 1;
                        }
                        None => told += 1,
                    }
                }
            }
        }
        told
    }
}

fn is_closed(session: &SessionState) -> bool {
    session.peer.get().is_some_and(|p| p.is_closed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_untracked_session_leaves_no_reference_behind() {
        let announcer = Announcer::new(Duration::from_millis(1), [true; 3], None);
        let sessions: Vec<_> = (0..3).map(|_| Arc::new(SessionState::default())).collect();
        let mut tracking: Vec<_> = sessions.iter().map(|s| announcer.track(s)).collect();
        assert_eq!(announcer.live().len(), 3);
        assert!(sessions.iter().all(|s| Arc::weak_count(s) == 1));
        // The middle one ends: it is no longer announced to, and nothing keeps its
        // allocation (a `Weak` would, after its last `Arc` went).
        drop(tracking.remove(1));
        assert_eq!(Arc::weak_count(&sessions[1]), 0);
        let live = announcer.live();
        assert_eq!(live.len(), 2);
        assert!(live.iter().all(|s| !Arc::ptr_eq(s, &sessions[1])));
        drop(live);
        // A session whose state is gone is skipped until its tracking goes too.
        let mut sessions = sessions;
        drop(sessions.remove(0));
        assert_eq!(announcer.live().len(), 1);
        drop(tracking);
        assert!(announcer.live().is_empty());
        assert!(sessions.iter().all(|s| Arc::weak_count(s) == 0));
        assert!(announcer.sessions.lock().unwrap().sessions.is_empty());
    }

    #[test]
    fn the_session_table_gives_its_room_back_as_sessions_end() {
        let announcer = Announcer::new(Duration::from_millis(1), [true; 3], None);
        let sessions: Vec<_> = (0..5_000)
            .map(|_| Arc::new(SessionState::default()))
            .collect();
        let tracking: Vec<_> = sessions.iter().map(|s| announcer.track(s)).collect();
        let room = || announcer.sessions.lock().unwrap().sessions.capacity();
        assert!(room() >= 5_000);
        drop(tracking);
        assert_eq!(room(), 0);
    }

    #[test]
    fn pages_walk_the_list_once() {
        let items: Vec<u32> = (0..5).collect();
        let (first, next) = page(items.clone(), None, 2, "tools").unwrap();
        assert_eq!(first, [0, 1]);
        let (second, next) = page(items.clone(), next.as_ref(), 2, "tools").unwrap();
        assert_eq!(second, [2, 3]);
        let (last, next) = page(items.clone(), next.as_ref(), 2, "tools").unwrap();
        assert_eq!((last, next), (vec![4], None));
    }

    #[test]
    fn foreign_cursors_are_invalid_params() {
        let items: Vec<u32> = (0..5).collect();
        let (_, next) = page(items.clone(), None, 2, "tools").unwrap();
        for bad in [
            Cursor("garbage".into()),
            Cursor(encode_cursor(99, "tools")),
            Cursor(encode_cursor(2, "prompts")),
            Cursor(crate::base64::encode(b"tools#+2")),
        ] {
            let err = page(items.clone(), Some(&bad), 2, "tools").unwrap_err();
            assert_eq!(err.code, modelctx_types::ErrorCode::INVALID_PARAMS);
        }
        let err = page(items, next.as_ref(), 2, "prompts").unwrap_err();
        assert_eq!(err.code, modelctx_types::ErrorCode::INVALID_PARAMS);
    }
}
