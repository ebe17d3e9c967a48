//! Detection paths that do not depend on the kernel having GETDENTS.
//! (The kernel-dependent answers are asserted in kernel_getdents.rs.)

use io_uring_getdents::detect::{detect_with, Choice, Support, Unavailable};
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
