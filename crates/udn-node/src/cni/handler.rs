//! The CNI server's answers (upstream `cniserver.go: handleCNIRequest`): a request is parsed
//! into a pod request (errors before that are plain text), dispatched by command, and
//! answered with upstream's `Response` JSON, or a 400 whose body is
//! `[ns/pod <sandbox> network <net> NAD <nad> NAD key <key>] <error>`.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use tracing::{info, warn};
use udn_cni_protocol::{Command, ErrorResponse, PodRequest, Request, RequestMetrics, Response};

use super::add::add;
use super::check::check;
use super::context::CniContext;
use super::del::del;
use super::gc::gc;
use super::network::{Attachment, attachment_of_netconf};
use super::server::{Handler, Reply};

/// The server's handler.
#[derive(Debug, Clone)]
pub struct CniHandler {
    ctx: Arc<CniContext>,
}

impl CniHandler {
    /// A handler over `ctx`.
    pub fn new(ctx: Arc<CniContext>) -> Self {
        Self { ctx }
    }

    fn attachment(&self, config: &[u8]) -> Result<Attachment, String> {
        let text = std::str::from_utf8(config).map_err(|e| e.to_string())?;
        attachment_of_netconf(text, &self.ctx.config.cluster).map_err(|e| e.to_string())
    }

    async fn dispatch(&self, body: &[u8]) -> (String, Result<Reply, ErrorResponse>) {
        let request = match Request::from_json(body) {
            Ok(request) => request,
            Err(error) => {
                return (
                    String::new(),
                    Err(ErrorResponse::Plain(format!(
                        "failed to parse CNI request: {error}"
                    ))),
                );
            }
        };
        let parsed = request.command();
        let command = parsed
            .as_ref()
            .map(|c| c.as_str().to_owned())
            .unwrap_or_default();
        match parsed.unwrap_or(Command::Other(String::new())) {
            // Upstream's server answers these at once; STATUS: the server is up, so the
            // plugin is ready.
            Command::Status | Command::Update => return (command, Ok(Reply::empty())),
            Command::Gc => {
                let answer = match self.attachment(&request.config) {
                    Ok(attachment) => gc(&self.ctx, &attachment, &request.config)
                        .await
                        .map(|removed| {
                            if !removed.is_empty() {
                                info!(network = %attachment.net_name, removed = removed.len(), "CNI GC");
                            }
                            Reply::empty()
                        })
                        .map_err(|e| ErrorResponse::Plain(e.to_string())),
                    Err(error) => Err(ErrorResponse::Plain(format!("broken stdin args: {error}"))),
                };
                return (command, answer);
            }
            _ => {}
        }
        let pod_request = match PodRequest::from_request(&request, |bytes| self.attachment(bytes)) {
            Ok(pod_request) => pod_request,
            Err(error) => return (command, Err(ErrorResponse::Plain(error.to_string()))),
        };
        let attachment = &pod_request.config;
        let label = pod_request.label(
            &attachment.net_name,
            &attachment.nad_key,
            &attachment.nad_key,
        );
        let for_pod = |error: &dyn std::fmt::Display| ErrorResponse::for_pod(&label, error);
        let answer = match pod_request.command {
            Command::Add => {
                // A little before the server's own cut-off, so the answer is ADD's error.
                let budget = self.ctx.config.cni_request_timeout;
                let deadline = tokio::time::Instant::now() + budget.mul_f64(0.95);
                add(&self.ctx, &pod_request, deadline)
                    .await
                    .map(|result| Reply::json(Response::add(result, None).to_json()))
                    .map_err(|e| for_pod(&e))
            }
            Command::Del => del(&self.ctx, &pod_request)
                .await
                .map(|_| Reply::json(Response::del().to_json()))
                .map_err(|e| for_pod(&e)),
            Command::Check => check(&self.ctx, &pod_request)
                .await
                .map(|()| Reply::empty())
                .map_err(|e| for_pod(&e)),
            ref other => Err(for_pod(&format!("unsupported CNI command {other}"))),
        };
        (command, answer)
    }
}

fn error_reply(error: &ErrorResponse) -> Reply {
    match error {
        ErrorResponse::Cni(_) => Reply::cni_error(error.body()),
        ErrorResponse::Plain(_) => Reply::text_error_bytes(error.body()),
    }
}

impl Handler for CniHandler {
    async fn request(&self, body: Bytes) -> Reply {
        let started = Instant::now();
        let (command, answer) = self.dispatch(&body).await;
        self.ctx
            .metrics
            .record_request(&command, answer.is_ok(), started.elapsed());
        match answer {
            Ok(reply) => reply,
            Err(error) => {
                let text = String::from_utf8_lossy(&error.body()).trim_end().to_owned();
                warn!(command = %command, error = %text, "CNI request failed");
                error_reply(&error)
            }
        }
    }

    fn shim_metrics(&self, body: Bytes) {
        match RequestMetrics::from_json(&body) {
            Ok(report) => self
                .ctx
                .metrics
                .cni_shim_duration
                .get_or_create(&crate::metrics::CniLabels::new(
                    report.command.as_str(),
                    !report.has_err,
                ))
                .observe(report.elapsed_time),
            Err(error) => warn!(error = %error, "unreadable CNI shim metrics"),
        }
    }

    fn timed_out(&self) -> Reply {
        Reply::text_error(format!(
            "CNI request did not finish within {} s",
            self.ctx.config.cni_request_timeout.as_secs()
        ))
    }

    fn timeout(&self) -> std::time::Duration {
        self.ctx.config.cni_request_timeout
    }
}
