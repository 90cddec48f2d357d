//! How the arm changes hands among the teleop sessions: a client asking for a role
//! (`extensions.role`, `REQUEST_CONTROL`, `RELEASE_CONTROL`), the panel's Revoke, the heartbeat
//! watchdog's demotion, a session that ends, and the promotion of an observer when the arm is
//! free again.
//! Part of [`Sessions`]' state machine, split from `sessions.rs` to keep each file readable.

use serde_json::json;

use super::{Action, Ctx, RoleRequest, SessionRole, Sessions, alert_ext};
use crate::session::SessionState;

impl Sessions {
    /// An ALERT that also tells the session its role now (`extensions.role`).
    pub fn role_alert(
        &mut self,
        conn: u64,
        state: SessionState,
        code: &str,
        message: &str,
        role: SessionRole,
    ) {
        let mut ext = alert_ext(code, message);
        ext.insert("role".into(), json!(role.as_str()));
        self.event(conn, "ALERT", state, ext);
    }

    /// A session asks for a role. `controller`: it takes the arm if nobody (of any protocol)
    /// holds it (`CONTROL_TAKEN`; it moves the arm after its own START), else it is told who
    /// holds it and nothing changes (`CONTROL_BUSY`: a session that asked only to watch still
    /// is not promoted later; it asks again).
    /// `observer`: it gives the arm up if it has it (the arm follows `pause_behavior`, and an
    /// observer that wants it may be promoted) and is never promoted (`CONTROL_RELEASED`). Every
    /// request is answered, with `extensions.role` the role it has now.
    pub(super) fn request_role(&mut self, conn: u64, want: RoleRequest, ctx: &mut Ctx<'_>) {
        let state = ctx.state;
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let Some(session) = c.session_id.clone() else {
            return;
        };
        let peer = c.peer;
        match want {
            RoleRequest::Controller => {
                if self.controller == Some(conn) {
                    let message = "you control the arm already";
                    self.role_alert(
                        conn,
                        state,
                        "CONTROL_TAKEN",
                        message,
                        SessionRole::Controller,
                    );
                } else if c.no_promote {
                    let message = "control was revoked from the panel; reconnect to ask again";
                    self.role_alert(conn, state, "REVOKED", message, SessionRole::Observer);
                } else if self.controller.is_none()
                    && ctx
                        .arm
                        .claim(conn, &format!("{peer} (session {session})"))
                        .is_some()
                {
                    c.role = SessionRole::Controller;
                    c.started = false;
                    c.watch_only = false;
                    self.controller = Some(conn);
                    self.promote_pending = false;
                    self.actions.push_back(Action::NewController);
                    self.actions.push_back(Action::Log {
                        code: "CONTROL_TAKEN",
                        text: format!("{peer} asked for the arm and controls it"),
                    });
                    let message = "you control the arm now; send START to move it";
                    self.role_alert(
                        conn,
                        state,
                        "CONTROL_TAKEN",
                        message,
                        SessionRole::Controller,
                    );
                } else {
                    let message = format!("the arm is held by {}; you observe", ctx.arm.describe());
                    self.role_alert(conn, state, "CONTROL_BUSY", &message, SessionRole::Observer);
                }
            }
            RoleRequest::Observer => {
                c.watch_only = true;
                if self.controller == Some(conn) {
                    self.demote(conn);
                    ctx.arm.release(conn);
                    self.promote_pending = true;
                    self.actions.push_back(Action::Log {
                        code: "CONTROL_RELEASED",
                        text: format!("{peer} gave the arm up; it follows pause_behavior"),
                    });
                }
                let message = "you observe; you do not hold the arm";
                self.role_alert(
                    conn,
                    state,
                    "CONTROL_RELEASED",
                    message,
                    SessionRole::Observer,
                );
            }
        }
    }

    pub(super) fn revoked(&mut self, ctx: &mut Ctx<'_>) {
        let Some(conn) = self.controller else {
            return;
        };
        self.demote(conn);
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        c.no_promote = true;
        let peer = c.peer;
        self.role_alert(
            conn,
            ctx.state,
            "REVOKED",
            "control was revoked from the panel; you observe",
            SessionRole::Observer,
        );
        self.actions.push_back(Action::Log {
            code: "REVOKED",
            text: format!("{peer} demoted to observer"),
        });
    }

    /// Heartbeat loss: NET_TIMEOUT, and the controller's arm follows `pause_behavior` while the
    /// simulation keeps running. A controller still silent after the grace period (frozen, not
    /// gone: its socket stays open) is demoted, so an observer or another client can take over.
    pub(super) fn watchdog(&mut self, ctx: &mut Ctx<'_>) {
        let (timeout, grace) = (self.config.heartbeat_timeout, self.config.controller_grace);
        let frozen = self.controller.filter(|c| {
            self.conns
                .get(c)
                .and_then(|c| c.timed_out_at)
                .is_some_and(|at| ctx.now.saturating_duration_since(at) >= grace)
        });
        if let Some(conn) = frozen {
            self.demote(conn);
            ctx.arm.release(conn);
            self.promote_pending = true;
            let message = format!(
                "no heartbeat for {} ms plus the {:.1} s grace period; you observe now",
                timeout.as_millis(),
                grace.as_secs_f64()
            );
            if let Some(c) = self.conns.get(&conn) {
                let text = format!("{}: {message}", c.peer);
                self.actions.push_back(Action::Log {
                    code: "DEMOTED",
                    text,
                });
            }
            self.role_alert(conn, ctx.state, "DEMOTED", &message, SessionRole::Observer);
            self.promote_observer(ctx);
        }
        let lapsed: Vec<u64> = self
            .sessions()
            .filter(|(_, c)| {
                !c.timed_out() && ctx.now.saturating_duration_since(c.last_heartbeat) > timeout
            })
            .map(|(id, _)| id)
            .collect();
        for id in lapsed {
            let Some(c) = self.conns.get_mut(&id) else {
                continue;
            };
            c.timed_out_at = Some(ctx.now);
            let text = format!(
                "no heartbeat from {} for {} ms",
                c.peer,
                timeout.as_millis()
            );
            self.actions.push_back(Action::Log {
                code: "NET_TIMEOUT",
                text,
            });
            if self.controller == Some(id) {
                self.actions.push_back(Action::Disengage { hold: true });
                self.actions.push_back(Action::Hold);
            }
            let message = format!("no heartbeat for {} ms; the arm holds", timeout.as_millis());
            self.alert(id, ctx.state, "NET_TIMEOUT", &message);
        }
    }

    /// Takes the controller role from `conn` (revoked, or frozen past the grace period): it
    /// observes, the arm follows `pause_behavior`, and the arm is free for the next one.
    pub(super) fn demote(&mut self, conn: u64) {
        if self.controller != Some(conn) {
            return;
        }
        self.controller = None;
        self.actions.push_back(Action::NewController);
        self.actions.push_back(Action::Hold);
        if let Some(c) = self.conns.get_mut(&conn) {
            c.role = SessionRole::Observer;
            c.started = false;
        }
    }

    /// A session ends (DISCONNECT or socket closed): the controller's arm follows
    /// `pause_behavior`, and the next observer may take over.
    pub(super) fn end_session(&mut self, conn: u64, ctx: &mut Ctx<'_>) {
        if self.controller == Some(conn) {
            self.demote(conn);
            ctx.arm.release(conn);
            self.promote_pending = true;
            self.actions.push_back(Action::Note(
                "the controller left; the arm follows pause_behavior".into(),
            ));
        }
        if let Some(c) = self.conns.get_mut(&conn) {
            c.session_id = None;
            c.role = SessionRole::Observer;
            c.started = false;
        }
    }

    /// After a teleop controller left, the longest-connected observer with a live heartbeat
    /// (and that did not ask to only watch)
    /// gets the arm and is told so (ALERT `PROMOTED`, `extensions.role`); it moves the arm after
    /// its START. Only a teleop controller's leaving hands the arm on: an agent or lockstep
    /// client that leaves (and may reconnect at once) keeps its claim free.
    pub(super) fn promote_observer(&mut self, ctx: &mut Ctx<'_>) {
        if !self.promote_pending {
            return;
        }
        if self.controller.is_some() || !ctx.arm.is_free() {
            // Someone (of any protocol) took the arm meanwhile.
            self.promote_pending = false;
            return;
        }
        let Some((conn, c)) = self
            .sessions()
            .filter(|(_, c)| {
                c.role == SessionRole::Observer && !c.timed_out() && !c.no_promote && !c.watch_only
            })
            .min_by_key(|(id, c)| (c.session_since, *id))
        else {
            return;
        };
        let label = format!(
            "{} (session {})",
            c.peer,
            c.session_id.as_deref().unwrap_or_default()
        );
        let peer = c.peer;
        self.promote_pending = false;
        if ctx.arm.claim(conn, &label).is_none() {
            return;
        }
        self.controller = Some(conn);
        self.actions.push_back(Action::NewController);
        if let Some(c) = self.conns.get_mut(&conn) {
            c.role = SessionRole::Controller;
            c.started = false;
        }
        self.actions.push_back(Action::Log {
            code: "PROMOTED",
            text: format!("{peer} now controls the arm"),
        });
        self.role_alert(
            conn,
            ctx.state,
            "PROMOTED",
            "you control the arm now (the previous controller left); send START to move it",
            SessionRole::Controller,
        );
    }
}
