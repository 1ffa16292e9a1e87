//! The command pipeline after parsing: a request is looked up once
//! (`table::resolve`), admitted or refused by one function (`admit`), then
//! run by one function (`call`) that keeps the statistics, the slow log,
//! the latency monitor, MONITOR's feed and tracking. Every way a command
//! reaches the server (a client, EXEC, a script, the AOF, a master) goes
//! through here; see docs/design.md, "The request path".

pub mod block_timer;
pub mod blocking;
pub mod gate;
pub mod pause;
pub mod propagation;
pub mod session;

pub mod admit;
pub mod call;
pub mod stats;
pub mod wrapper;

use crate::commands::{multi, table, CommandSpec, Ctx};
use crate::exec::session::Client;
use crate::protocol::{Args, Out};
use crate::server::state::Shared;

/// The pipeline handle: what a command passes through besides the table,
/// shared by every connection: the EXEC gate, CLIENT PAUSE, blocked clients.
#[derive(Default)]
pub struct Pipeline {
    /// Keeps other commands out while a transaction runs (gate.rs).
    pub gate: gate::ExecGate,
    pub pause: pause::Pause,
    /// Clients blocked on keys or WAIT.
    pub blocking: blocking::Registry,
}
pub use admit::{arity_ok, Source};

/// What the table says of a request: the command (a container's subcommand
/// resolved), or the container whose subcommand is unknown, or nothing.
pub type Lookup = Option<Result<&'static CommandSpec, &'static CommandSpec>>;

/// Looks a request up, once per request.
pub fn lookup(args: &Args) -> Lookup {
    table::resolve(args)
}

/// Runs one request a client (or its master, or EXEC) sent: admits it,
/// queues it inside MULTI, or calls it.
pub fn process(
    shared: &Shared,
    client: &mut Client,
    out: &mut Out,
    args: &Args,
    found: Lookup,
    source: Source,
) {
    let spec = match admit::admit(shared, client, out, args, found, source) {
        admit::Verdict::Refused | admit::Verdict::Invalid(_) => return,
        admit::Verdict::Queue(spec) => {
            let mut ctx = Ctx {
                shared,
                client,
                out,
            };
            multi::queue(&mut ctx, spec, args);
            return;
        }
        admit::Verdict::Run(spec) => spec,
    };
    let mut ctx = Ctx {
        shared,
        client,
        out,
    };
    call::call(&mut ctx, spec, args);
}
