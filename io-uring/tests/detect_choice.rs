//! Detection paths that do not depend on the kernel having GETDENTS.
//! (The kernel-dependent answers are asserted in kernel_getdents.rs.)

use io_uring_getdents::detect::{
    detect_plus, detect_with, Choice, PlusSupport, PlusUnavailable, Support, Unavailable,
    PLUS_ENV_VAR,
};
use io_uring_getdents::io_uring::{opcode, IoUring, Probe};

#[test]
fn off_is_disabled_without_touching_the_ring() {
    let ring = IoUring::new(2).unwrap();
    let support = detect_with(&ring, Choice::Off);
    assert!(matches!(
        support,
        Support::Unavailable(Unavailable::Disabled)
    ));
    assert_eq!(support.opcode(), None);
    assert!(support.to_string().contains("IO_URING_GETDENTS=off"));
}

#[test]
fn an_opcode_followed_by_others_is_refused_before_any_submission() {
    // NOP (0) exists on every kernel with a probe, and so do later opcodes:
    // detection must call it another operation, not GETDENTS.
    let mut ring = IoUring::new(2).unwrap();
    match detect_with(&ring, Choice::Opcode(opcode::Nop::CODE)) {
        Support::Unavailable(Unavailable::OtherOpcode { opcode: 0, last }) => {
            let mut probe = Probe::new();
            ring.submitter().register_probe(&mut probe).unwrap();
            assert!(probe.is_supported(last));
            assert!(!probe.is_supported(last.wrapping_add(1)) || last == u8::MAX);
        }
        other => panic!("expected OtherOpcode, got {other:?}"),
    }
    // Nothing was submitted to the caller's ring.
    assert_eq!(ring.completion().len(), 0);
}

#[test]
fn an_unlisted_opcode_is_not_listed() {
    let ring = IoUring::new(2).unwrap();
    let support = detect_with(&ring, Choice::Opcode(250));
    assert!(
        matches!(
            support,
            Support::Unavailable(Unavailable::NotListed { opcode: 250 })
        ),
        "{support:?}"
    );
}

#[test]
fn override_values() {
    assert_eq!(Choice::parse("auto"), Ok(Choice::Auto));
    assert_eq!(Choice::parse(""), Ok(Choice::Auto));
    assert_eq!(Choice::parse(" 58 "), Ok(Choice::Opcode(58)));
    let err = Choice::parse("256").unwrap_err();
    assert!(
        err.contains("IO_URING_GETDENTS") && err.contains("256"),
        "{err}"
    );
}

/// `IO_URING_GETDENTS=N` with N the kernel's last operation: on a mainline
/// kernel that is a known operation (62, `IORING_OP_PIPE`, on 6.16 to
/// 6.18), which detection must refuse by name before submitting anything
/// with a directory and a buffer. On the patched kernel the last operation
/// is GETDENTS itself and passes.
#[test]
fn the_last_opcode_of_a_mainline_kernel_is_refused_before_any_submission() {
    let mut ring = IoUring::new(2).unwrap();
    let mut probe = Probe::new();
    ring.submitter().register_probe(&mut probe).unwrap();
    let last = (0..=u8::MAX)
        .rev()
        .find(|&n| probe.is_supported(n))
        .expect("the probe lists NOP at least");
    let support = detect_with(&ring, Choice::Opcode(last));
    match &support {
        Support::Unavailable(Unavailable::KnownOpcode { opcode, name }) => {
            assert_eq!(*opcode, last);
            assert!(name.starts_with("IORING_OP_"), "{name}");
            let message = support.to_string();
            assert!(
                message.contains(name) && message.contains(&last.to_string()),
                "{message}"
            );
        }
        Support::Available { opcode } => assert_eq!(*opcode, last),
        // Kernels newer than the list of mainline operations: the real
        // read is the judge there.
        Support::Unavailable(Unavailable::SelfTest { .. } | Unavailable::Mismatch { .. })
            if last > 62 =>
        {
            println!("skipped: opcode {last} is newer than the known mainline operations");
        }
        other => panic!("opcode {last}: expected a refusal by name, got {other:?}"),
    }
    assert_eq!(ring.completion().len(), 0);
}

/// Without GETDENTS there is no readdirplus, and nothing is submitted to
/// find out: the answer carries GETDENTS' own reason.
#[test]
fn no_getdents_means_no_readdirplus() {
    if std::env::var_os(PLUS_ENV_VAR).is_some() {
        println!("skipped: {PLUS_ENV_VAR} is set, and answers first");
        return;
    }
    let mut ring = IoUring::new(2).unwrap();
    for choice in [Choice::Off, Choice::Opcode(opcode::Nop::CODE)] {
        let support = detect_with(&ring, choice);
        let plus = detect_plus(&support);
        match &plus {
            PlusSupport::Unavailable(PlusUnavailable::NoGetdents(why)) => {
                assert_eq!(*why, support.to_string());
            }
            other => panic!("{choice:?}: expected NoGetdents, got {other:?}"),
        }
        assert_eq!(plus.opcode(), None);
        let message = plus.to_string();
        assert!(
            message.starts_with("readdirplus unavailable: IORING_OP_GETDENTS unavailable"),
            "{message}"
        );
    }
    assert_eq!(ring.completion().len(), 0);
}
