//! The GETDENTS SQE is built by layout, not through the io-uring crate (it
//! has no raw constructor). These tests compare it byte for byte with SQEs
//! the io-uring crate builds itself for `Read`, which has the same fields
//! (fd, addr, len, off): only the opcode byte may differ, and for
//! readdirplus the statx mask in `file_index`. They run once per io-uring
//! line: 0.6 always, 0.7 with the `io-uring-0-7` feature.

/// The same tests for each io-uring line: `$uring` is the re-exported
/// crate, `$build` the `GetDents` method that builds its entries.
macro_rules! layout_tests {
    ($module:ident, $uring:ident, $build:ident) => {
        mod $module {
            use io_uring_getdents::opcode::{GetDents, Target, GETDENTS_PLUS};
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

            /// Readdirplus: `rw_flags` (bytes 28-31) holds IORING_GETDENTS_PLUS,
            /// which is bit 0, as `Read` places its own `rw_flags`, and
            /// `file_index` (bytes 44-47) the statx mask; the rest is as
            /// for a plain read.
            #[test]
            fn plus_sets_rw_flags_and_the_statx_mask_in_file_index() {
                assert_eq!(GETDENTS_PLUS, 1);
                let masks = [
                    0,
                    libc::STATX_BASIC_STATS,
                    libc::STATX_ALL | libc::STATX_MNT_ID,
                    0x1234_5678,
                    // The kernel refuses STATX__RESERVED; the builder passes it on.
                    1 << 31,
                ];
                for mask in masks {
                    for fd in [Target::Fd(7), Target::Fixed(3)] {
                        let ours = GetDents::new(fd, 4096 as *mut u8, 8192)
                            .offset(u64::MAX)
                            .plus(mask)
                            .$build()
                            .user_data(5);
                        let read = match fd {
                            Target::Fd(fd) => {
                                opcode::Read::new(types::Fd(fd), 4096 as *mut u8, 8192)
                            }
                            Target::Fixed(i) => {
                                opcode::Read::new(types::Fixed(i), 4096 as *mut u8, 8192)
                            }
                        };
                        let theirs = read.offset(u64::MAX).rw_flags(1).build().user_data(5);
                        let (ours, theirs) = (bytes(ours), bytes(theirs));
                        assert_eq!(ours[0], GetDents::CODE);
                        assert_eq!(ours[28..32], 1u32.to_ne_bytes(), "rw_flags");
                        assert_eq!(ours[44..48], mask.to_ne_bytes(), "file_index");
                        assert_eq!(theirs[44..48], [0; 4]);
                        assert_eq!(ours[1..44], theirs[1..44], "mask {mask:#x}");
                        assert_eq!(ours[48..], theirs[48..], "mask {mask:#x}");
                    }
                }
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
