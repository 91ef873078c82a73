//! Closed loop: `clients` clients, each with one request out at a time
//! (docs/semantics.md §10).
//!
//! A client sends its first request after a first think time; then, each
//! time it hears the answer to a request — its response, a rejection it
//! does not retry, a drop, or its own `timeout` — it thinks again and sends
//! the next. A rejection follows the source's retry policy first: the next
//! request waits until the current one is over. So the load falls as
//! responses slow down, as it does for people and for worker pools — where
//! an open-loop source keeps sending whatever happens.
//!
//! Arrivals depend on each limiter's answers, so every limiter's run makes
//! its own (on its own queue), where the other patterns' are made once for
//! all. Think times draw from a stream of their own per client and request
//! (tag `thnk`), the first from request 0's.

use crate::clock::Nanos;
use crate::scenario::Service;

use super::Clients;

#[derive(Debug, Clone)]
pub struct Closed {
    /// Time between an answer and the next request.
    pub think: Service,
    /// How long a client waits for a response; `None`: for ever.
    pub timeout: Option<Nanos>,
    pub cost: u64,
    pub clients: Clients,
}
