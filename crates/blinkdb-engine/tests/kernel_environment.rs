//! Scenario: the environment the kernel backend needs is checked and the
//! errors say what is missing: no CAP_BPF, no bpffs (mounted when we can).
//!
//! The "missing" cases run this test binary again as a child with
//! capabilities dropped by `setpriv`; the child prints the probe's error.

use std::path::Path;
use std::process::Command;

use crate::kernel_support::{kernel_root, say_skipped};
use blinkdb_engine::bpf::{ensure_bpffs, is_bpffs, probe, FilterSpec, KernelFilter, PinLocation};

/// Set in the child: the pin root to probe.
const CHILD_ROOT_VAR: &str = "BLINKDB_KERNEL_PROBE_ROOT";

/// In the child, probes and prints the outcome; in a normal run, does nothing.
#[test]
fn probe_child() {
    let Ok(root) = std::env::var(CHILD_ROOT_VAR) else {
        return;
    };
    match probe(Path::new(&root)) {
        Ok(()) => println!("PROBE-RESULT: available"),
        Err(err) => println!("PROBE-RESULT: {err}"),
    }
    // A create must fail the same way, as the BF.* layer will see it.
    let location = PinLocation::for_key(&root, 0, b"k");
    match KernelFilter::create(&location, &FilterSpec::digest(10, 0.01)) {
        Ok(_) => println!("CREATE-RESULT: created"),
        Err(err) => println!("CREATE-RESULT: {err}"),
    }
}

/// Runs `probe_child` under `setpriv` with `caps` dropped; its printed lines.
fn probe_without(test: &str, caps: &[&str], root: &Path) -> Option<String> {
    let me = std::env::current_exe().unwrap();
    let drop_list = caps
        .iter()
        .map(|cap| format!("-{cap}"))
        .collect::<Vec<_>>()
        .join(",");
    let out = Command::new("setpriv")
        .arg(format!("--inh-caps={drop_list}"))
        .arg(format!("--bounding-set={drop_list}"))
        .arg(&me)
        .args([
            "--exact",
            "kernel_environment::probe_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ROOT_VAR, root)
        .output();
    match out {
        Ok(out) if out.status.success() => Some(String::from_utf8_lossy(&out.stdout).into_owned()),
        Ok(out) => panic!(
            "child failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(err) => {
            say_skipped(test, &format!("cannot run setpriv: {err}"));
            None
        }
    }
}

fn result_line<'a>(output: &'a str, tag: &str) -> &'a str {
    output
        .lines()
        .find_map(|line| line.split_once(tag).map(|(_, rest)| rest))
        .unwrap_or_else(|| panic!("no {tag} line in child output:\n{output}"))
}

#[test]
fn without_cap_bpf_the_error_says_so() {
    const TEST: &str = "without_cap_bpf_the_error_says_so";
    // Run only where the backend works, so the drop is the only difference.
    let Some(root) = kernel_root(TEST) else {
        return;
    };
    let Some(output) = probe_without(TEST, &["bpf", "sys_admin"], root.path()) else {
        return;
    };
    let probe_line = result_line(&output, "PROBE-RESULT: ");
    assert_eq!(
        probe_line,
        "kernel filters unavailable: CAP_BPF missing (bpf(BPF_MAP_CREATE) failed: Operation not permitted (os error 1))"
    );
    let create_line = result_line(&output, "CREATE-RESULT: ");
    assert!(create_line.contains("CAP_BPF missing"), "{create_line}");
}

#[test]
fn unmounted_bpffs_is_mounted_by_root_and_refused_without_it() {
    const TEST: &str = "unmounted_bpffs_is_mounted_by_root_and_refused_without_it";
    let Some(_bpf_ok) = kernel_root(TEST) else {
        return;
    };
    // A root outside /sys/fs/bpf gets its own bpffs mount.
    let dir = tempfile::tempdir().unwrap();
    let pins = dir.path().join("pins");

    // Without CAP_SYS_ADMIN (but with CAP_BPF) the mount is refused.
    if let Some(output) = probe_without(TEST, &["sys_admin"], &pins) {
        let line = result_line(&output, "PROBE-RESULT: ");
        let expected = format!(
            "kernel filters unavailable: bpffs not mounted at {} and cannot mount: mount(\"bpf\", \"{}\", \"bpf\") failed: Operation not permitted (os error 1) (needs root: CAP_SYS_ADMIN)",
            pins.display(),
            pins.display()
        );
        assert_eq!(line, expected);
    }

    assert!(!is_bpffs(dir.path()).unwrap());
    ensure_bpffs(&pins).unwrap();
    let mounted = is_bpffs(&pins).unwrap();
    let created = KernelFilter::create(
        &PinLocation::for_key(&pins, 0, b"k"),
        &FilterSpec::digest(10, 0.01),
    )
    .map(|filter| filter.info().pin_path.exists());
    // Unmount before asserting so a failure does not leave a mount behind.
    let target = std::ffi::CString::new(pins.to_str().unwrap()).unwrap();
    // SAFETY: target is a NUL-terminated path; MNT_DETACH has no other needs.
    let unmounted = unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) } == 0;
    assert!(mounted, "ensure_bpffs mounted bpffs at {}", pins.display());
    assert!(created.unwrap(), "a filter could be pinned there");
    assert!(unmounted, "cleanup unmount of {}", pins.display());
}
