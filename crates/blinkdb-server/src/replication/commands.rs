//! The replication commands' entries of the command table.

use crate::commands::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(crate) const COMMANDS: &[crate::commands::table::CommandSpec] = &[
    cmd!("wait", 3, NOSCRIPT, NOKEYS, "generic", "3.0.0", "Wait for the synchronous replication of all the write commands sent in the context of the current connection", super::wait;
        acl: acl::CONNECTION,
        complexity: "O(1)",
        args: "numreplicas:integer timeout:integer",
        tips: &["request_policy:all_shards", "response_policy:agg_min"]),
    // Redis 7.2's (7.0.15 has none): the entry is 8.0's.
    cmd!("waitaof", 4, BLOCKING, NOKEYS, "generic", "7.2.0", "Blocks until all of the preceding write commands sent by the connection are written to the append-only file of the master and/or replicas.", super::waitaof::waitaof;
        acl: acl::CONNECTION,
        complexity: "O(1)",
        args: "numlocal:integer numreplicas:integer timeout:integer",
        tips: &["request_policy:all_shards", "response_policy:agg_min"]),
    cmd!("role", 1, NOSCRIPT | LOADING_OK | STALE | FAST, NOKEYS, "server", "2.8.12", "Return the role of the instance in the context of replication", super::role;
        acl: acl::ADMIN | acl::DANGEROUS,
        complexity: "O(1)"),
    cmd!("replicaof", 3, ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING, NOKEYS, "server", "5.0.0", "Make the server a replica of another instance, or promote it as master.", super::replica::replicaof;
        acl: acl::ADMIN | acl::DANGEROUS,
        complexity: "O(1)",
        args: "args:oneof(host-port:block(host:string port:integer) no-one:block(no:NO one:ONE))"),
    cmd!("slaveof", 3, ADMIN | NOSCRIPT | STALE | NO_ASYNC_LOADING, NOKEYS, "server", "1.0.0", "Make the server a replica of another instance, or promote it as master.", super::replica::replicaof;
        acl: acl::ADMIN | acl::DANGEROUS,
        complexity: "O(1)",
        args: "args:oneof(host-port:block(host:string port:integer) no-one:block(no:NO one:ONE))",
        doc_flags: doc::DEPRECATED,
        deprecated_since: "5.0.0",
        replaced_by: "`REPLICAOF`"),
    cmd!("failover", -1, ADMIN | NOSCRIPT | STALE, NOKEYS, "server", "6.2.0", "Start a coordinated failover between this server and one of its replicas.", super::failover::command;
        acl: acl::ADMIN | acl::DANGEROUS,
        complexity: "O(1)",
        args: "target:block=TO?(host:string port:integer force:FORCE?) abort:ABORT? milliseconds:integer=TIMEOUT?"),
    cmd!("psync", -3, ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI, NOKEYS, "server", "2.8.0", "Internal command used for replication", super::master::psync;
        args: "replicationid:string offset:integer"),
    cmd!("sync", 1, ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI, NOKEYS, "server", "1.0.0", "Internal command used for replication", super::master::psync),
    cmd!("replconf", -1, ADMIN | NOSCRIPT | LOADING_OK | STALE | ALLOW_BUSY, NOKEYS, "server", "3.0.0", "An internal command for configuring the replication stream", super::master::replconf;
        complexity: "O(1)",
        doc_flags: doc::SYSCMD),
];
