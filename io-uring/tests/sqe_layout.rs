//! The GETDENTS SQE is built by layout, not through the io-uring crate (it
//! has no raw constructor). These tests compare it byte for byte with SQEs
//! the io-uring crate builds itself for `Read`, which has the same fields
//! (fd, addr, len, off): only the opcode byte may differ. They run once per
//! io-uring line: 0.6 always, 0.7 with the `io-uring-0-7` feature.

/// The same tests for each io-uring line: `$uring` is the re-exported
/// crate, `$build` the `GetDents` method that builds its entries.
macro_rules! layout_tests {
    ($module:ident, $uring:ident, $build:ident) => {
        mod $module {
            use io_uring_getdents::opcode::GetDents;
            use io_uring_getdents::$uring::{opcode, squeue, types};

            fn bytes(entry: squeue::Entry) -> [u8; 64] {
                // SAFETY: `squeue::Entry` is a `#[repr(C)]` wrapper of the 64-byte
                // `io_uring_sqe`, made only of integers: every byte is initialised.
                unsafe { std::mem::transmute::<squeue::Entry, [u8; 64]>(entry) }
            }

            fn assert_same_but_opcode(ours: squeue::Entry, theirs: squeue::Entry) {
                let (ours, theirs) = (bytes(ours), bytes(theirs));
                assert_eq!(ours[0], GetDents::CODE);
                assert_eq!(theirs[0], opcode::Read::CODE);
                assert_eq!(ours[1..], theirs[1..], "SQE bytes differ beyond the opcode");
            }

            #[test]
            fn plain_fd_matches_read() {
                let cases = [
                    (0, 0usize, 0u32, 0u64),
                    (3, 0x7fff_1234_5678, 32 * 1024, 0),
                    (1_000_000, usize::MAX, u32::MAX, u64::MAX),
                    (-1, 8, 24, 0x7fff_ffff_ffff_ffff),
                ];
                for (fd, addr, len, off) in cases {
                    let ours = GetDents::new(types::Fd(fd), addr as *mut u8, len)
                        .offset(off)
                        .$build()
                        .user_data(0xdead_beef);
                    let theirs = opcode::Read::new(types::Fd(fd), addr as *mut u8, len)
                        .offset(off)
                        .build()
                        .user_data(0xdead_beef);
                    assert_same_but_opcode(ours, theirs);
                }
            }

            #[test]
            fn fixed_file_matches_read() {
                for index in [0u32, 7, u32::MAX >> 1] {
                    let ours = GetDents::new(types::Fixed(index), 4096 as *mut u8, 512)
                        .offset(99)
                        .$build();
                    let theirs = opcode::Read::new(types::Fixed(index), 4096 as *mut u8, 512)
                        .offset(99)
                        .build();
                    assert_same_but_opcode(ours, theirs);
                }
            }

            #[test]
            fn sqe_flags_set_after_build_survive() {
                let ours = GetDents::new(types::Fd(5), std::ptr::null_mut(), 0)
                    .$build()
                    .flags(squeue::Flags::IO_LINK | squeue::Flags::ASYNC);
                let theirs = opcode::Read::new(types::Fd(5), std::ptr::null_mut(), 0)
                    .build()
                    .flags(squeue::Flags::IO_LINK | squeue::Flags::ASYNC);
                assert_same_but_opcode(ours, theirs);
            }

            #[test]
            fn opcode_can_be_changed_at_run_time() {
                let entry = GetDents::new(types::Fd(3), std::ptr::null_mut(), 0)
                    .opcode(63)
                    .$build();
                assert_eq!(bytes(entry)[0], 63);
            }
        }
    };
}

layout_tests!(io_uring_0_6, io_uring, build);
#[cfg(feature = "io-uring-0-7")]
layout_tests!(io_uring_0_7, io_uring_0_7, build_0_7);
